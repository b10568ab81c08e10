"""Release support: the compat layer's eras against real installs, and
`discharge-fuzz bisect` finding a planted regression across real releases.

The ``slow`` tests create one environment per release they name (uv, a few
seconds each once downloaded; fuzz/triage/releases.py) and run after the main
suite in .ci/run: ``pytest -m slow``."""
import json
import os
import subprocess
import tomllib

import pytest

from fuzz import compat, ir, oracles
from fuzz.suppressions import known_findings, seen_on
from fuzz.suppressions import unsupported
from fuzz.cli import main as cli
from fuzz.ops.ref import Get
from fuzz.ops.semaphore import Signal
from fuzz.triage import bisect, filing, releases

OLDEST, NEWEST = releases.KNOWN[0], releases.KNOWN[-1]


def test_every_feature_the_eras_name_is_there_exactly_when_they_say_on_this_jax():
    wrong = {f: compat.probe(f) for f in compat.KNOWN_FEATURES if compat.has(f) != compat.probe(f)}
    assert not wrong, wrong


def test_the_floor_is_the_first_release_with_all_three_apis():
    assert compat.FLOOR == compat.parse_release(OLDEST) == (0, 6, 2)
    assert compat.supported(compat.jax_version())
    assert not compat.supported((0, 6, 1)) and not compat.supported((0, 13, 0))


def test_a_wrapper_whose_rule_a_release_lacks_is_not_applicable_there(monkeypatch):
    # As on 0.6.2 to 0.11.0, which register no discharge rule for custom_vmap_call:
    # the case is skipped with the reason on every path, not reported as failing.
    case = known_findings.BY_ID["custom-vmap-vjp-drops-ref-writes"].example
    has_rule = compat.has_discharge_rule   # (the release may lack it already)
    monkeypatch.setattr(compat, "has_discharge_rule", lambda p: p != "custom_vmap_call" and has_rule(p))
    report = oracles.check(case)
    assert not report.failures and not report.outcomes, report.failures
    assert set(report.skipped) == set(case.paths)
    assert all("registers no discharge rule for custom_vmap_call" in why
               for why in report.skipped.values()), report.skipped


def test_a_release_below_the_floor_or_not_a_number_is_one_line_and_exit_2(capsys):
    for bad in ("0.6.1", "0.12", "latest"):
        assert cli(["bisect", "--all", "--releases", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("discharge-fuzz: error:") and err.count("\n") == 1, err


def test_an_unknown_finding_is_one_line_and_exit_2(tmp_path, capsys):
    assert cli(["bisect", "no-such-finding", "--reports-dir", str(tmp_path)]) == 2
    assert "no such finding" in capsys.readouterr().err
    assert cli(["bisect", "--suppressions", "no-such-entry"]) == 2
    err = capsys.readouterr().err
    assert "no known finding or unsupported entry 'no-such-entry'" in err and err.count("\n") == 1
    assert cli(["bisect", "--suppressions", "--jax-repo", str(tmp_path)]) == 2
    assert "takes no --setup or --jax-repo" in capsys.readouterr().err


def _v(*verdicts):
    return dict(zip(("0.6.2", "0.7.2", "0.8.0", "0.10.2", "0.12.0.1"),
                    ({"verdict": v} for v in verdicts)))


def test_the_affected_range_counts_only_good_and_bad_releases():
    a = bisect.affected(_v("n/a", "good", "bad", "bad", "bad"))
    assert (a["first_bad"], a["last_good"], a["changes"]) == ("0.8.0", "0.7.2", ["regressed in 0.8.0"])
    a = bisect.affected(_v("bad", "bad", "n/a", "good", "good"))
    assert a["first_bad"] == "0.6.2" and a["last_good"] is None
    assert a["changes"] == ["fixed in 0.10.2 (after 0.7.2; the releases between could not tell)"]
    a = bisect.affected(_v("n/a", "other", "n/a", "other", "n/a"))
    assert a["first_bad"] is None and "no release could tell" in a["summary"]
    assert bisect.affected(_v("bad", "bad", "bad", "bad", "bad"))["summary"].startswith("bad on every")
    # A newer release that fails otherwise is named: "still bad" is not its verdict.
    a = bisect.affected(_v("good", "bad", "bad", "n/a", "other"))
    assert a["summary"] == "regressed in 0.7.2; still bad in 0.8.0; 0.12.0.1 fails otherwise"
    assert "otherwise" not in bisect.affected(_v("good", "bad", "bad", "bad", "n/a"))["summary"]


def test_a_verdict_needs_the_same_failure_as_the_verified_reproducer():
    raised = {"status": "reproduces", "exit_code": 1, "error": "TypeError", "output": "BUG: x"}
    wrong = {"status": "reproduces", "exit_code": 1, "error": None, "output": "BUG: y"}
    fixed = {"status": "does not reproduce", "exit_code": 0, "error": None, "output": ""}
    broken = {"status": "broken", "exit_code": 1, "error": None, "output": "AttributeError: no"}
    by_error = {"wanted": "TypeError", "fatal": False}
    assert bisect.judge(raised, by_error)["verdict"] == "bad"
    assert bisect.judge(wrong, by_error)["verdict"] == "other"
    assert bisect.judge(raised, {"wanted": None, "fatal": False})["verdict"] == "other"
    assert bisect.judge(fixed, by_error)["verdict"] == "good"
    assert bisect.judge(broken, by_error)["verdict"] == "n/a"
    # JAX wraps every failed callback in one JaxRuntimeError: the error inside counts.
    callback = "actual:   JaxRuntimeError: INTERNAL: CpuCallback error calling callback: {}"
    in_callback = {"wanted": "JaxRuntimeError", "cause": "AssertionError", "fatal": False}
    for cause, verdict in (("AssertionError", "bad"), ("ValueError: Out-of-bounds", "other")):
        ran = {**raised, "error": "JaxRuntimeError", "output": callback.format(cause)}
        assert bisect.judge(ran, in_callback)["verdict"] == verdict


def test_bisecting_one_more_release_adds_it_to_the_table_and_keeps_the_commits():
    def measured(verdicts):
        v = {r: {"verdict": x, "detail": ""} for r, x in verdicts.items()}
        return {"releases": v, "affected": bisect.affected(v)}
    before = measured({"0.8.0": "good", "0.8.1": "bad", "0.12.0": "bad"})
    commit = {"between": ["0.8.0", "0.8.1"], "first": "a" * 40, "subject": "Break it",
              "left": ["a" * 40], "last_before": "b" * 40}
    before["affected"]["commits"] = [commit]
    after = bisect.merged(before, measured({"0.12.1": "good"}))
    assert list(after["releases"]) == ["0.8.0", "0.8.1", "0.12.0", "0.12.1"]
    assert after["affected"]["commits"] == [commit]
    assert "fixed in 0.12.1" in after["affected"]["summary"]
    assert "commit aaaaaaaaaaaa (Break it)" in after["affected"]["summary"]
    # A known finding's table, measured from its example, is replaced whole.
    assert bisect.merged({**before, "source": "seen_on"}, measured({"0.12.1": "good"})) \
        == measured({"0.12.1": "good"})


# --- which releases each suppression is seen on ----------------------------------

def test_every_suppression_is_measured_on_every_release():
    every = bisect._suppression_ids()
    table = seen_on.load()
    missing = sorted({i for i, kind in every.items() for r in releases.KNOWN
                      if r not in table[kind].get(i, {})})
    stale = sorted(i for kind in seen_on.KINDS for i in table[kind] if every.get(i) != kind)
    assert not missing, ("measure them: discharge-fuzz bisect --suppressions "
                         + ",".join(missing))
    assert not stale, f"{seen_on.FILE} lists entries that are gone: {stale}"
    cells = {v.split(":")[0] for kind in seen_on.KINDS for seen in table[kind].values()
             for v in seen.values()}
    assert cells <= set(bisect.VERDICTS), cells


def test_the_test_extra_installs_at_most_the_newest_measured_release():
    """The suite checks the suppressions on the installed JAX: a release
    seen_on.json has not measured would fail it for what it fixed."""
    with open(os.path.join(os.path.dirname(__file__), os.pardir, "pyproject.toml"), "rb") as f:
        test_extra = tomllib.load(f)["project"]["optional-dependencies"]["test"]
    assert f"jax[cpu]<={NEWEST}" in test_extra, (test_extra, NEWEST)


def test_a_verdict_is_the_nearest_measured_release_at_or_below(monkeypatch):
    monkeypatch.setattr(seen_on, "TABLE", {"unsupported": {}, "known": {
        "a": {"0.6.2": "bad", "0.10.2": "good"}, "b": {"0.9.0": "bad"}}})
    assert seen_on.verdict("known", "a", (0, 10, 1)) == "bad"
    assert seen_on.verdict("known", "a", (0, 12, 1)) == "good"   # newer than any measured
    assert seen_on.verdict("known", "b", (0, 8, 3)) is None
    assert seen_on.applies("known", "b")   # bad, or not measured as old as this
    assert seen_on.applies("known", "never-measured")
    assert seen_on.applies("known", "a") == (compat.jax_version() < (0, 10, 2))


def _fixed_here(monkeypatch, kind, entry_id):
    """The table as if ``entry_id``'s example ran clean on every release."""
    table = {k: dict(v) for k, v in seen_on.TABLE.items()}
    table[kind][entry_id] = {r: "good" for r in releases.KNOWN}
    monkeypatch.setattr(seen_on, "TABLE", table)
    monkeypatch.setattr(known_findings, "KNOWN", seen_on.only_seen("known", known_findings.ALL_KNOWN))
    monkeypatch.setattr(unsupported, "CURRENT", seen_on.only_seen("unsupported", unsupported.TABLE))


def test_a_known_finding_not_seen_on_this_release_hides_nothing(monkeypatch):
    (k,) = [k for k in known_findings.KNOWN if k.id == "same-width-bitcast-below-2d"] or [None]
    if k is None:
        pytest.skip("the same-width bitcast below 2-D is not seen on this release")
    assert any(f.known == k.id for f in oracles.check(k.example).failures)
    _fixed_here(monkeypatch, "known", k.id)
    failures = oracles.check(k.example).failures
    assert failures and not any(f.known == k.id for f in failures), failures


def test_an_unsupported_entry_not_seen_on_this_release_hides_nothing(monkeypatch):
    (e,) = [e for e in unsupported.CURRENT if e.id == "tpu-interpret-masked-load"] or [None]
    if e is None:
        pytest.skip("the TPU interpreter's masked-load refusal is not seen on this release")
    assert [u[1] for u in oracles.check(e.example).unsupported] == [e]
    _fixed_here(monkeypatch, "unsupported", e.id)
    report = oracles.check(e.example)
    assert not report.unsupported and any(f.symptom_of() == "unsupported" for f in report.failures), \
        report.failures


# --- real releases -------------------------------------------------------------

def _in(release, code):
    env = releases.environment(release)
    proc = subprocess.run([env.python, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": bisect.ROOT}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("release", [OLDEST, NEWEST])
def test_the_eras_match_a_real_install(release):
    got = _in(release, "import json; from fuzz import compat; print(json.dumps("
                       "{f: [compat.has(f), compat.probe(f)] for f in compat.KNOWN_FEATURES}))")
    assert {f for f, (has, probe) in got.items() if has != probe} == set(), got
    assert sum(has for has, _ in got.values()) < len(got) or release == NEWEST


@pytest.mark.slow
def test_the_seen_on_table_is_what_the_oldest_and_newest_release_show():
    ids = ["same-width-bitcast-below-2d", "tpu-interpret-semaphore-read",
           "wait-nondecrement-collapses-ref", "tpu-interpret-masked-load"]
    found = bisect.measure_suppressions(ids, [OLDEST, NEWEST], jobs=2)
    table = seen_on.load()
    assert {i: v for kind in found for i, v in found[kind].items()} == {
        i: {r: table[kind][i][r] for r in (OLDEST, NEWEST)} for kind in found for i in found[kind]}


# The regression: an indexed signal; a jax.ref.get that 0.6.2 cannot render.
REGRESSION = ir.Case((ir.Ref("int16", (2,)), ir.Ref("float32", (2,))),
                     (Signal(ir.View(0, (ir.At((ir.Int(0),)),)), ir.Int(1)),
                      Get(ir.View(1, ()), sugar=False)))
PLANT = "campaign_plants:ignore_semaphore_transforms_from_0_12"


def _filed_under_plant(tmp_path, monkeypatch, hook):
    """REGRESSION filed as the campaign would, with ``hook``'s bug planted
    on this JAX (verified in a fresh interpreter under the same hook); then
    PYTHONPATH set so that `bisect --setup` finds the hook's module."""
    tests = os.path.dirname(__file__)
    module, name = compat.TRANSFORM_SEMAPHORE
    with monkeypatch.context() as m:
        m.setattr(module, name, lambda value, transforms, aval: value)
        failure = oracles.check(REGRESSION).failures[0]
        finding, _ = filing.record(
            failure, corpus_dir=tmp_path / "corpus", reports_dir=tmp_path / "reports",
            minimize=False, verify_prelude=f"import sys; sys.path[:0] = {[tests, bisect.ROOT]!r}\n"
                                           f"import campaign_plants; campaign_plants.{hook}()")
    assert finding.reproducer["status"] == "reproduces", finding.reproducer
    monkeypatch.setenv("PYTHONPATH", tests)
    return finding


def _bisected(tmp_path, finding) -> dict:
    return json.loads((tmp_path / "reports" / f"{finding.id}.json").read_text())["releases"]


@pytest.mark.slow
def test_bisect_finds_a_regression_planted_in_one_release(tmp_path, monkeypatch, capsys):
    finding = _filed_under_plant(tmp_path, monkeypatch, PLANT.split(":")[1])
    wanted = [OLDEST, "0.10.2", NEWEST]
    assert cli(["bisect", finding.id, "--releases", ",".join(wanted), "--setup", PLANT,
                "--reports-dir", str(tmp_path / "reports"), "--jobs", "2"]) == 0
    found = _bisected(tmp_path, finding)
    verdicts = {r: v["verdict"] for r, v in found["releases"].items()}
    assert verdicts == {OLDEST: "n/a", "0.10.2": "good", NEWEST: "bad"}, found
    assert "jax.ref.get" in found["releases"][OLDEST]["detail"]
    affected = found["affected"]
    assert (affected["first_bad"], affected["last_good"]) == (NEWEST, "0.10.2")
    assert affected["changes"] == [f"regressed in {NEWEST}"]
    report = (tmp_path / "reports" / f"{finding.id}.md").read_text()
    assert "### Affected releases" in report and f"| {OLDEST} | n/a |" in report
    assert "regressed in" in (tmp_path / "reports" / "releases.md").read_text()
    assert f"regressed in {NEWEST}" in capsys.readouterr().out


# A git checkout of JAX with history (tags jax-vX), for bisecting to the
# commit; CI reaches only package registries, so it has none.
JAX_REPO = os.environ.get("DISCHARGE_FUZZ_JAX_REPO", "/work/.mirror/jax-ml+jax/repo")
FROM_COMMIT = "campaign_plants:ignore_semaphore_transforms_from_threefry4x32"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(JAX_REPO), reason=(
    f"no git checkout of JAX at {JAX_REPO} (set DISCHARGE_FUZZ_JAX_REPO to one)"))
def test_bisect_narrows_a_planted_regression_to_its_commit(tmp_path, monkeypatch):
    finding = _filed_under_plant(tmp_path, monkeypatch, FROM_COMMIT.split(":")[1])
    assert cli(["bisect", finding.id, "--releases", "0.10.1,0.10.2", "--setup", FROM_COMMIT,
                "--jax-repo", JAX_REPO, "--reports-dir", str(tmp_path / "reports")]) == 0
    found = _bisected(tmp_path, finding)
    assert [v["verdict"] for v in found["releases"].values()] == ["good", "bad"], found
    (step,) = found["affected"]["commits"]
    assert step["between"] == ["0.10.1", "0.10.2"] and step["first"].startswith("5923cd99de"), step
    assert step["left"] == [step["first"]] and "threefry4x32" in step["subject"]
    assert "commit 5923cd99de" in found["affected"]["summary"]

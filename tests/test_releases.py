"""Release support: the compat layer's eras against real installs, and
`discharge-fuzz bisect` finding a planted regression across real releases.

The ``slow`` tests create one environment per release they name (uv, a few
seconds each once downloaded; fuzz/releases.py) and run after the main
suite in .ci/run: ``pytest -m slow``."""
import json
import os
import subprocess

import pytest

from fuzz import bisect, compat, findings, ir, oracles, releases
from fuzz.cli import main as cli
from fuzz.ops.ref import Get
from fuzz.ops.semaphore import Signal

OLDEST, NEWEST = releases.KNOWN[0], releases.KNOWN[-1]


def test_every_feature_the_eras_name_is_there_exactly_when_they_say_on_this_jax():
    wrong = {f: compat.probe(f) for f in compat.KNOWN_FEATURES if compat.has(f) != compat.probe(f)}
    assert not wrong, wrong


def test_the_floor_is_the_first_release_with_all_three_apis():
    assert compat.FLOOR == releases.parse(OLDEST) == (0, 6, 2)
    assert compat.supported(compat.jax_version())
    assert not compat.supported((0, 6, 1)) and not compat.supported((0, 13, 0))


def test_a_release_below_the_floor_or_not_a_number_is_one_line_and_exit_2(capsys):
    for bad in ("0.6.1", "0.12", "latest"):
        assert cli(["bisect", "--all", "--releases", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("discharge-fuzz: error:") and err.count("\n") == 1, err


def test_an_unknown_finding_is_one_line_and_exit_2(tmp_path, capsys):
    assert cli(["bisect", "no-such-finding", "--reports-dir", str(tmp_path)]) == 2
    assert "no such finding" in capsys.readouterr().err


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
        finding, _ = findings.record(
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

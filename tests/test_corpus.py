"""The corpus replayed: seeds pass; each regression still fails with its
recorded signature (strict xfail: a JAX fix turns CI red, and the regression
goes); bad files are refused with one line naming them, never executed."""
import ast
import json
import os

import pytest

from fuzz import cli, compat, exits, ir, oracles, serialize
from fuzz.campaign.property import Stats, check_property
from fuzz.ops.semaphore import Read
from fuzz.triage import bisect, corpus, findings, render, reports

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, "corpus")
REPORTS = os.path.join(os.path.dirname(__file__), os.pardir, "reports")
SEEDS = corpus.files(ROOT, "seed")
REGRESSIONS = corpus.files(ROOT, "regression")


def test_the_corpus_is_not_empty():
    assert len(SEEDS) >= 3 and len(REGRESSIONS) >= 3


@pytest.mark.parametrize("path", SEEDS, ids=os.path.basename)
def test_seed_passes(path):
    check_property(corpus.load(path).case, Stats())


def _expected(path):
    """Strict xfail, raising the oracle exception the regression records."""
    oracle = json.load(open(path)).get("oracle")
    classes = tuple(c for c in oracles.ORACLES if c.oracle == oracle) or (oracles.OracleFailure,)
    return pytest.param(path, id=os.path.basename(path), marks=pytest.mark.xfail(
        strict=True, reason="a bug in JAX, recorded as a regression", raises=classes))


@pytest.mark.parametrize("path", [_expected(p) for p in REGRESSIONS])
def test_regression_is_fixed(path):
    """Raises the recorded failure while JAX has the bug; anything else (a
    crash of the fuzzer) fails the suite."""
    entry = corpus.load(path)
    if entry.meta.get("oracle") == "crash":
        return _still_dies(entry)
    _skip_where_its_report_says_fixed(entry)
    recorded_on = tuple(int(p) for p in (entry.meta.get("first_jax") or "0.0").split(".")[:2])
    if recorded_on != compat.jax_version()[:2]:
        pytest.skip(f"recorded on JAX {entry.meta.get('first_jax')}; signatures name its frames")
    for f in oracles.check(entry.case).failures:
        if findings.signature(f) == entry.signature:
            raise f


def _skip_where_its_report_says_fixed(entry):
    """A regression `discharge-fuzz bisect` saw fixed (or failing otherwise)
    on the release nearest this one is not replayed: it stays for the older
    releases it fails on. One that JAX fixes unbisected fails the suite."""
    record = reports.load(REPORTS, entry.meta["id"])
    assert record is not None, f"{entry.meta['id']}: a regression without its report"
    if (here := reports.verdict_here(record)) not in (None, "bad"):
        pytest.skip(f"{entry.meta['id']} is {here} on the release nearest this one")
    return record


def _still_dies(entry):
    """A crash or hang kills the process it runs in, so its reproducer runs
    in a fresh one, where its report says the bug is (its Affected releases)."""
    record = _skip_where_its_report_says_fixed(entry)
    # A hang that outlasts 10 s here, where JAX runs the same kernel fixed in
    # 3, is the hang (the campaign waited 30); a slow machine can only make a
    # fixed one look hung, never a hung one fixed.
    ran = bisect.recheck(record, timeout_s=10)
    if ran["verdict"] == "bad":
        raise oracles.OracleFailure(f"still {record['symptom']}: {ran['detail']}",
                                    primitive=record["primitive"], path=record["reproducer"]["path"])


def test_a_hang_regression_that_jax_fixes_is_seen_fixed():
    """The check above can fail: with the hang's loop fixed in the
    reproducer's interpreter, its regression is good, no longer bad."""
    record = reports.load(REPORTS, "crash-dma_start-54e8a344")
    if (here := reports.verdict_here(record)) not in (None, "bad"):
        pytest.skip(f"the hang is {here} on the release nearest this one")
    request = {**bisect.request_of(record), "timeout_s": 20,
               "setup": ["campaign_plants:fix_64_bit_tiling"], "sys_path": [os.path.dirname(__file__)]}
    assert bisect.step(request)["verdict"] == "good"


def _regression(tmp_path, **changes):
    data = json.loads(open(REGRESSIONS[0]).read())
    for dotted, value in changes.items():
        node, *keys = data, *dotted.split(".")
        for k in keys[:-1]:
            node = node[int(k) if k.isdigit() else k]
        node[int(keys[-1]) if keys[-1].isdigit() else keys[-1]] = value
    path = tmp_path / os.path.basename(REGRESSIONS[0])
    path.write_text(json.dumps(data))
    return path


HOSTILE = "ValueError') or __import__('os').system('echo pwned') #"


@pytest.mark.parametrize("changes, says", [
    ({"case.refs.0.shape": "2"}, "case.refs[0].shape: expected a list"),
    ({"case.schema": 99}, "schema: version 99"),
    ({"corpus": 2}, "corpus: format 2"),
    ({"kind": "exploit"}, "kind: 'exploit'"),
    ({"case.refs.0.kind": "int16'); import os; ('"}, "ref kind"),
    ({"case.expect": {"type": HOSTILE, "match": "x", "primitive": "?"}}, "case.expect.type"),
    ({"case.expect": {"type": "ValueError", "match": "(", "primitive": "?"}}, "not a regular expression"),
    ({"id": "../../etc/passwd"}, "id:"),
])
def test_bad_corpus_files_are_refused_naming_the_file(tmp_path, changes, says):
    path = _regression(tmp_path, **changes)
    with pytest.raises(corpus.CorpusError) as e:
        corpus.load(path)
    assert str(path) in str(e.value) and says in str(e.value) and "\n" not in str(e.value)


def test_truncated_file_is_refused_by_the_cli_in_one_line(tmp_path, capsys):
    path = tmp_path / "seed.json"
    path.write_text(open(SEEDS[0]).read()[:-30])
    assert cli.main(["replay", str(path)]) == exits.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert str(path) in err and "not valid JSON" in err and len(err.splitlines()) == 1
    assert cli.main(["report", "--no-verify", "--reports-dir", str(tmp_path / "r"),
                     "--corpus-dir", str(tmp_path / "c"), str(path)]) == exits.EXIT_ERROR
    assert not (tmp_path / "r").exists()


def test_a_hostile_regex_stays_a_string_in_the_reproducer():
    payload = "'''\nimport os; os.system('echo pwned')\n\"\"\""
    case = ir.Case((ir.Ref("int16", (2,)),), (Read(ir.View(0)),),
                   expect=ir.ExpectedError("ValueError", payload, "semaphore_read"))
    tree = ast.parse(render.render_check(case, "pallas_call"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    assert "os" not in imported
    calls = {n.func.attr for n in ast.walk(tree)
             if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert "system" not in calls
    assert any(isinstance(n, ast.Constant) and isinstance(n.value, str) and "pwned" in n.value
               for n in ast.walk(tree))
    assert serialize.loads(serialize.dumps(case)) == case


def test_replay_cli_exit_codes(tmp_path, capsys):
    assert cli.main(["replay", *SEEDS[:2]]) == exits.EXIT_OK
    fixed = _regression(tmp_path, signature="valid-runs|?|-|a bug JAX no longer has|-")
    assert cli.main(["replay", str(fixed)]) == exits.EXIT_CHANGED
    assert "CHANGED" in capsys.readouterr().out

"""Reports: JAX's bug template, a JSON record for machines, an index with
status, and a snippet of at most 15 lines that shows the bug alone."""
import json
import os
import re
import subprocess
import sys

import jax
import pytest

from fuzz import cli, exits, oracles, paths
from fuzz.suppressions import known_findings, seen_on
from fuzz.suppressions.known_findings import BY_ID
from fuzz.triage import bisect, corpus, filing, findings, render, reports, reproducer, snippet
from hunting import known_failure

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)
REGRESSIONS = corpus.files(os.path.join(ROOT, "corpus"), "regression")


def _skip_unless_bad_here_record(record):
    """Skip where a report's bug is not (its Affected releases)."""
    here = reports.verdict_here(record or {})
    if here not in (None, "bad"):
        pytest.skip(f"JAX {jax.__version__}: the reproducer is {here} here (its report's "
                    "Affected releases)")


def _skip_unless_bad_here(regression):
    _skip_unless_bad_here_record(
        reports.load(os.path.join(ROOT, "reports"), corpus.load(regression).meta["id"]))

REQUIRED = {"signature", "oracle", "symptom", "stage", "versions", "first_seen",
            "last_seen", "hits", "paths", "status", "reproducer", "case"}


def _file(tmp_path, known_id):
    failure = known_failure(known_id)
    return filing.record(failure, corpus_dir=tmp_path / "corpus",
                           reports_dir=tmp_path / "reports", verify=False)[0]


@pytest.mark.parametrize("known_id", sorted(BY_ID))
def test_a_known_findings_title_is_a_whole_sentence(known_id):
    """Cut from its description, never mid-phrase (stop 29's cut at the
    first parenthesis titled one 'semaphore_read does not check that its view is')."""
    title = reports._first_clause(BY_ID[known_id].description)
    assert title.count("(") == title.count(")") and title.count("[") == title.count("]"), title
    assert " '" not in reports._QUOTED.sub("", title), title   # no quote left open
    assert title.rsplit(" ", 1)[-1] not in {"a", "an", "the", "to", "of", "in", "is", "with",
                                             "that", "and", "or", "as", "by"}, title
    assert 30 <= len(title) <= 220, title


def test_a_hangs_title_names_where_it_was_stuck_and_its_path():
    """...and what its kernel calls, on what data: a hang is never minimized,
    and its stack blames what ran last (the pipeline's copies: dma_start)."""
    record = reports.load(os.path.join(ROOT, "reports"), "crash-dma_start-54e8a344")
    finding = findings.Finding.from_record(record)
    assert reports.title(finding) == ("A kernel calling `pltpu.emit_pipeline` on int64 data hangs "
                                      "in `tpu_info.py:_get_tiling_factor` (`pallas_call`)")
    # ...and its report says why the snippet names a TPU device on a CPU.
    assert "Note: pltpu.emit_pipeline reads the device" in reports.summary(finding)


def test_a_title_says_internal_api_where_only_jax_internals_reproduce():
    record = reports.load(os.path.join(ROOT, "reports"), "crash-dma_start-54e8a344")
    finding = findings.Finding.from_record(record)
    assert not reports.title(finding).endswith("(internal API)")
    finding.reproducer = {**finding.reproducer, "path": "abstract"}
    assert reports.title(finding).endswith(" (internal API)")


def test_report_follows_the_bug_template_and_has_a_record(tmp_path):
    finding = _file(tmp_path, "read-dtype-unchecked")
    md = (tmp_path / "reports" / f"{finding.id}.md").read_text()
    # It opens with the snippet, then the description and the verifying reproducer.
    assert md.index("```python") < md.index("### Description") < md.index("The verifying") \
        < md.index("### System info")
    assert md.startswith(f"# {BY_ID['read-dtype-unchecked'].description[:20]}")
    assert "jaxlib" in md.split("### System info")[1]
    assert "runs without any error" in md
    record = json.loads((tmp_path / "reports" / f"{finding.id}.json").read_text())
    assert REQUIRED <= set(record)
    assert record["symptom"] == "missing error" and record["versions"]["jax"]
    index = (tmp_path / "reports" / reports.INDEX).read_text()
    # --no-verify; an invalid program accepted is a usability issue
    assert (f"[{finding.id}]({finding.id}.md) | unclear or missing error on invalid code | "
            "unverified |") in index
    assert "**Severity:** unclear or missing error on invalid code." in md
    # Rewritten elsewhere (bisect, requote), it keeps the System info it was seen on.
    finding.versions = {**finding.versions, "environment": "jax: 0.0.0 (where it was seen)"}
    reports.write(tmp_path / "reports", finding)
    again = reports.load(tmp_path / "reports", finding.id)
    reports.write(tmp_path / "reports", findings.Finding.from_record(again))
    md = (tmp_path / "reports" / f"{finding.id}.md").read_text()
    assert "```\njax: 0.0.0 (where it was seen)\n```" in md.split("### System info")[1]


def test_report_all_marks_a_regression_fixed_when_it_no_longer_fails(tmp_path, capsys):
    finding = _file(tmp_path, "check-sem-avals-last-transform-not-indexer")
    regression = tmp_path / "corpus" / "regressions" / f"{finding.id}.json"
    data = json.loads(regression.read_text())
    data["signature"] = "valid-runs|?|-|gone in this JAX|-"
    regression.write_text(json.dumps(data))
    args = ["report", "--all", "--no-verify", "--corpus-dir", str(tmp_path / "corpus"),
            "--reports-dir", str(tmp_path / "reports")]
    assert cli.main(args) == exits.EXIT_CHANGED
    assert json.loads((tmp_path / "reports" / f"{finding.id}.json").read_text())["status"] \
        == "fixed in this JAX"
    assert "| fixed in this JAX |" in (tmp_path / "reports" / reports.INDEX).read_text()


def test_report_all_relabels_a_finding_as_this_jax_shows_it(tmp_path):
    """A record filed before a label was mended (an exception under jit once
    called a wrong value) gets the label its re-check gives."""
    finding = _file(tmp_path, "check-sem-avals-last-transform-not-indexer")
    record = tmp_path / "reports" / f"{finding.id}.json"
    data = json.loads(record.read_text())
    assert (data["symptom"], data["stage"]) == ("exception", "trace")
    record.write_text(json.dumps({**data, "symptom": "wrong value", "stage": "execution"}))
    assert cli.main(["report", "--all", "--no-verify", "--corpus-dir", str(tmp_path / "corpus"),
                     "--reports-dir", str(tmp_path / "reports")]) == exits.EXIT_OK
    data = json.loads(record.read_text())
    assert (data["symptom"], data["stage"], data["status"]) == ("exception", "trace", "still failing")
    assert "| still failing | exception | trace |" in (tmp_path / "reports" / reports.INDEX).read_text()


def test_report_all_renders_a_reproducer_again_on_this_jax(tmp_path):
    """A stored script written for another release (the abstract path
    renders only what its release needs) is rendered again on this JAX
    before it is checked, not run as it was filed: an API it calls that
    this JAX lacks would otherwise read as the bug reproducing."""
    finding = _file(tmp_path, "check-sem-avals-last-transform-not-indexer")
    record = tmp_path / "reports" / f"{finding.id}.json"
    data = json.loads(record.read_text())
    stale = data["reproducer"]["script"].replace("def kernel(", "import no_such_module\ndef kernel(", 1)
    record.write_text(json.dumps({**data, "reproducer": {**data["reproducer"], "script": stale}}))
    assert cli.main(["report", "--all", "--corpus-dir", str(tmp_path / "corpus"),
                     "--reports-dir", str(tmp_path / "reports")]) == exits.EXIT_OK
    repro = json.loads(record.read_text())["reproducer"]
    assert "no_such_module" not in repro["script"] and repro["status"] == "reproduces", repro


def test_report_all_takes_the_plain_form_a_report_filed_before_it_lacked(tmp_path):
    """A report filed in the path's own form (jax_refs' jax.jit(jax.checkpoint(
    kernel))) before reproducers tried the plain one is shown plainly after
    ``report --all``, where the bug shows so too."""
    known = "addupdate-after-scalar-store-numpy-dtype"
    failure = next(f for f in oracles.check(BY_ID[known].example).failures
                   if f.known == known and (f.oracle, f.path) == ("model-vs-path", "jax_refs"))
    finding, _ = filing.record(failure, corpus_dir=tmp_path / "corpus",
                               reports_dir=tmp_path / "reports", minimize=False)
    record = tmp_path / "reports" / f"{finding.id}.json"
    data = json.loads(record.read_text())
    old = reproducer.for_failure(finding.case, "jax_refs", failure, finding.id)
    record.write_text(json.dumps({**data, "reproducer": {
        **data["reproducer"], "path": "jax_refs", "script": old,
        "render": {**data["reproducer"]["render"], "plain": False}}}))
    assert "jax.checkpoint(kernel)" in old
    assert cli.main(["report", "--all", "--corpus-dir", str(tmp_path / "corpus"),
                     "--reports-dir", str(tmp_path / "reports")]) == exits.EXIT_OK
    repro = json.loads(record.read_text())["reproducer"]
    assert (repro["status"], repro["path"], repro["render"]["plain"]) == (
        "reproduces", "jax_refs", True), repro
    assert "checkpoint" not in (tmp_path / "reports" / f"{finding.id}.md").read_text()


def test_report_cli_files_a_case_and_counts_it_again(tmp_path, capsys):
    regression = REGRESSIONS[0]
    _skip_unless_bad_here(regression)
    args = ["report", "--no-verify", "--corpus-dir", str(tmp_path / "c"),
            "--reports-dir", str(tmp_path / "r"), regression]
    assert cli.main(args) == exits.EXIT_OK and "NEW" in capsys.readouterr().out
    assert cli.main(args) == exits.EXIT_OK and "hits 2" in capsys.readouterr().out


def test_report_known_files_the_entries_named_and_refuses_an_unknown_one(tmp_path, capsys):
    """`report --known IDS`: one report per root cause, the entries named
    only; a name that is no live known finding is a one-line error, exit 2."""
    dirs = ["--corpus-dir", str(tmp_path / "c"), "--reports-dir", str(tmp_path / "r")]
    assert cli.main(["report", "--known", "no-such-entry", *dirs]) == exits.EXIT_ERROR
    assert "not a known finding live on this JAX: no-such-entry" in capsys.readouterr().err
    wanted = "read-view-shape-unchecked"
    if wanted not in {k.id for k in known_findings.KNOWN}:
        pytest.skip(f"{wanted} is not live on this JAX")
    assert cli.main(["report", "--known", wanted, "--no-verify", "--no-minimize", *dirs]) == 0
    (record,) = reports.records(tmp_path / "r")
    assert record["known"] == wanted and record["releases"]["affected"]["summary"]
    assert "unclear or missing error" in (tmp_path / "r" / reports.INDEX).read_text()
    # `bisect --suppressions` measuring a new release rewrites the table it quotes.
    table = {"known": {wanted: {**seen_on.TABLE["known"][wanted], "9.9.9": "good"}}}
    bisect.requote(tmp_path / "r", table)
    (record,) = reports.records(tmp_path / "r")
    assert record["releases"]["releases"]["9.9.9"]["verdict"] == "good"
    assert "fixed in 9.9.9" in record["releases"]["affected"]["summary"]


def _filed_reports():
    """Each filed report (not flaky): the first of each severity class in
    the index's order runs with the suite, the rest with the slow tests
    (each starts a fresh interpreter)."""
    directory = os.path.join(ROOT, "reports")
    seen, params = set(), []
    for record in sorted(reports.records(directory), key=reports._rank):
        first = reports.severity(record) not in seen
        seen.add(reports.severity(record))
        params.append(pytest.param(record["id"], id=record["id"],
                                   marks=() if first else pytest.mark.slow))
    return params


def _snippet_of(finding_id: str) -> tuple[str, str]:
    """(title, snippet) of a filed report, as reports/<id>.md shows them."""
    text = open(os.path.join(ROOT, "reports", finding_id + ".md")).read()
    return text.splitlines()[0].removeprefix("# "), re.search(r"```python\n(.*?)```", text, re.S)[1]


@pytest.mark.parametrize("finding_id", _filed_reports())
def test_every_report_has_a_short_public_snippet_that_shows_its_bug_alone(finding_id, tmp_path):
    """What a maintainer pastes: at most 15 lines, no JAX internals unless
    the title owns up to them, and it runs alone in a fresh interpreter and
    shows the bug (the error it names, or output a correct JAX would not print)."""
    record = reports.load(os.path.join(ROOT, "reports"), finding_id)
    _skip_unless_bad_here_record(record)
    title, text = _snippet_of(finding_id)
    lines = text.splitlines()
    assert len(lines) <= 15, text
    assert lines[-1].startswith("# Bug: "), text
    code = "\n".join(line for line in lines if not line.lstrip().startswith("#"))
    assert "jax._src" not in code or re.search(r"\(internal API\b", title), text
    repro = record["reproducer"]
    run = dict(args=[sys.executable, "-I", "-c", text], cwd=tmp_path, capture_output=True,
               text=True, env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    if repro.get("fatal"):   # the bug is that it dies, or never returns
        try:
            ran = subprocess.run(**run, timeout=10)   # (3 s where JAX is fixed)
        except subprocess.TimeoutExpired:
            return
        assert ran.returncode < 0, text + ran.stdout + ran.stderr
        return
    ran = subprocess.run(**run, timeout=180)
    if "python " in (repro.get("output") or "").partition("\n")[0]:   # a result is no Array
        assert "has no attribute 'tolist'" in ran.stderr, text + ran.stderr
        return
    if error := repro["error"]:   # the bug is the error it raises (a comparison's side too)
        assert ran.returncode == 1, text + ran.stdout + ran.stderr
        # (its message may span lines, or be none: a bare AssertionError)
        assert re.search(rf"^([\w.]+\.)?{error}(: |$)", ran.stderr, re.M), ran.stderr
        return
    assert ran.returncode == 0, text + ran.stderr
    case = findings.Finding.from_record(record).case
    if repro.get("comparison"):   # both sides printed: they differ
        sides = [line.partition(":")[2].strip() for line in ran.stdout.strip().splitlines()[-2:]]
        assert len(sides) == 2 and sides[0] != sides[1], ran.stdout
    elif case.valid:   # it prints what a correct JAX does not
        values = render.model_values(case, repro["path"])
        assert values is None or ran.stdout.strip() != str(list(values)), text
        # ...and what its comment says it prints (a maintainer compares the two)
        if said := re.search(r"# Bug: prints (.*?); expected", text):
            assert ran.stdout.strip().splitlines()[-1][:140] == said[1][:140], text + ran.stdout
    # (an invalid case's bug is that it runs: it should have raised)



# What a title may name, and how a snippet that shows it spells it; in
# groups, of which a title often names alternatives ("a signal or wait",
# "inside jax.checkpoint or a custom_vmap function"): one of them is called.
_NAMED = (
    {r"\bsignals?\b|semaphore_signal": ("semaphore_signal",),
     r"\bwaits?\b|semaphore_wait": ("semaphore_wait", ".wait("),
     r"semaphore_read": ("semaphore_read",)},
    {r"jax\.jit": ("jax.jit",), r"checkpoint": ("jax.checkpoint",), r"custom_vmap": ("custom_vmap",),
     r"custom_vjp": ("custom_vjp",)},
    {r"bitcast": ("bitcast",), r"reshape": ("reshape",)},
    {r"pltpu\.store|masked store": ("pltpu.store",), r"pltpu\.load|masked load": ("pltpu.load",)},
    {r"\bjvp\b|forward-mode": ("jax.jvp",),
     r"\bvjp\b|reverse-mode": ("jax.vjp", "jax.linearize", "jax.grad")},
    {r"\bscan\b": ("lax.scan",), r"while_loop|fori_loop": ("while_loop", "fori_loop")},
    {r"\bvmap\b": ("jax.vmap",)}, {r"pipeline": ("emit_pipeline",)},
    {r"\bcopy\b|\bDMA\b|dma_start": ("make_async_copy", "make_async_remote_copy",
                                      "emit_pipeline")},
    {r"addupdate": ("addupdate", "+=")}, {r"TPU interpreter": ("InterpretParams",)},
    {r"shard_map": ("shard_map",)}, {r"run_state": ("run_state",)},
    {r"debug[_ .](callback|print)": ("jax.debug",)},
)


@pytest.mark.parametrize("finding_id", [p.values[0] for p in _filed_reports()])
def test_what_a_title_names_is_what_its_snippet_calls(finding_id):
    """A title that names a primitive or transformation (a signal, jax.vmap,
    the TPU interpreter) has a snippet that calls it, or one of the
    alternatives it names with it: a report titled "the TPU interpreter
    ignores add=True" once showed pallas_call refusing add=True."""
    title, text = _snippet_of(finding_id)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    missing = []
    for group in _NAMED:
        named = [pattern for pattern in group if re.search(pattern, title)]
        if named and not any(s in code for pattern in named for s in group[pattern]):
            missing.append(named)
    assert not missing, f"{title!r} names {missing}, which its snippet does not call:\n{text}"


@pytest.mark.parametrize("actual, expected, comment", [
    ("results with avals [[[1], 'int32'], [[], 'int16']] and values [[0], 0]",
     "no error; results with avals [[[1], 'int32'], [[1], 'int16']]",
     "Bug: result 2 is int16[] (prints [[0], 0]); expected: int16[1], as declared"),
    ("results with avals [[[1], 'int32']] and values [[0]]",
     "no error; results with avals [[[1], 'int32']] and values [[1]]",
     "Bug: prints [[0]]; expected: prints [[1]]"),
    ("ValueError: Cannot lower jaxpr with effects: {<SemaphoreEffect object at 0x7f2907c98680>}",
     "no error; results with avals [[[], 'int16']] and values [0]",
     "Bug: raises ValueError: Cannot lower jaxpr with effects: {<SemaphoreEffect object at …>}; "
     "expected: no error, prints [0]"),
    ("TypeError: carry input and carry output must have equal types, but they differ:",
     "no error; results with avals [[[1], 'int32']]",
     "Bug: raises TypeError: carry input and carry output must have equal types, but they "
     "differ; expected: no error"),
    ("results with avals [[[1], 'int32']] and values [[-2147483648]]",
     "IndexError with a message matching 'out of bounds' (from semaphore_signal)",
     "Bug: prints [[-2147483648]]; expected: IndexError with a message matching 'out of "
     "bounds' (from semaphore_signal)"),
], ids=["shape", "value", "error-instead-of-values", "error", "missing-error"])
def test_a_snippets_comment_says_what_happens_and_what_should_in_plain_words(
        actual, expected, comment):
    output = f"actual:   {actual}\nexpected: {expected}\nBUG: ..."
    assert snippet.said({"output": output}) == comment
    for record in reports.records(os.path.join(ROOT, "reports")):   # and every filed one
        words = snippet.said(record.get("reproducer") or {}, record["message"])
        assert words.startswith("Bug: ") and "results with avals" not in words, words
        assert not re.search(r"0x[0-9a-f]{6,}", words), words


def test_a_title_says_the_bug_in_words_and_no_signature(tmp_path):
    finding = _file(tmp_path, "read-dtype-unchecked")
    finding.known = None
    title = reports.title(finding)
    assert finding.id.rsplit("-", 1)[1] not in title and "|" not in title
    assert title.startswith(f"An invalid `{finding.primitive}` is accepted without the error"), title


def test_a_description_names_the_public_call_not_the_fuzzers_path(tmp_path):
    finding = _file(tmp_path, "read-dtype-unchecked")
    finding.paths = ("pallas_call", "tpu_interpret")
    text = reports.summary(finding)
    assert ("It shows in `pl.pallas_call(..., interpret=True)` and in `pl.pallas_call(..., "
            "interpret=pltpu.InterpretParams())`, ") in text, text
    assert "`pallas_call`" not in text and "path" not in text
    assert all(paths.fact(p, "SHOWN") for p in paths.NAMES)


def test_neighbouring_releases_with_one_verdict_and_reason_are_one_row():
    tested = {r: {"verdict": "n/a", "detail": f"JAX {r} has no pltpu.foo"}
              for r in ("0.6.2", "0.7.0", "0.10.0")}
    tested |= {"0.11.0": {"verdict": "good", "detail": ""}, "0.12.0": {"verdict": "bad"},
               "0.12.1": {"verdict": "bad"}, "0.9.0": {"verdict": "n/a", "detail": "it hung"}}
    rows = reports.affected_section({"affected": {"summary": "bad on 0.12.0 to 0.12.1"},
                                     "releases": tested})[6:-1]
    assert rows == ["| 0.6.2 to 0.7.0 | n/a | JAX 0.6.2 to 0.7.0 has no pltpu.foo |",
                    "| 0.9.0 | n/a | it hung |", "| 0.10.0 | n/a | JAX 0.10.0 has no pltpu.foo |",
                    "| 0.11.0 | good |  |", "| 0.12.0 to 0.12.1 | bad |  |"]


def test_the_index_ranks_by_severity_then_releases_then_hits(tmp_path):
    """A silent wrong value before a crash before a refusal before a missing
    error; among equals, the one bad on more releases, then the most hit."""
    def record(fid, oracle, symptom, hits=1, bad=0, exception=None):
        rels = {f"0.{n}.0": {"verdict": "bad"} for n in range(bad)}
        return {"id": fid, "oracle": oracle, "symptom": symptom, "hits": hits,
                "exception": exception, "releases": {"releases": rels} if rels else None}
    rows = [record("usability", "invalid-rejected", "missing error", hits=99),
            record("refused", "valid-runs", "unsupported", exception="NotImplementedError"),
            record("crash", "crash", "timeout"),
            record("wrong-few", "model-vs-path", "wrong value", bad=1),
            record("wrong-many", "model-vs-path", "wrong value", bad=3),
            record("wrong-many-hit", "model-vs-path", "wrong value", bad=3, hits=5)]
    assert [r["id"] for r in sorted(rows, key=reports._rank)] == [
        "wrong-many-hit", "wrong-many", "wrong-few", "crash", "refused", "usability"]
    assert [reports.severity(r) for r in rows[:3]] == [
        "unclear or missing error on invalid code", "valid code refused",
        "crash or hang on valid code"]


def test_the_upstream_queue_has_every_filed_root_cause_most_severe_first():
    """reports/upstream.md, as written with the index: an issue body per
    filed report, in the index's order, each with its snippet."""
    directory = os.path.join(ROOT, "reports")
    text = open(os.path.join(directory, reports.UPSTREAM)).read()
    index = open(os.path.join(directory, reports.INDEX)).read()
    ids = [line.split("](")[1].split(".md")[0] for line in text.splitlines()
           if line.startswith(("Silent", "Crash", "Valid", "Unclear"))]
    assert ids and ids == [i for i in (line.split("](")[0][3:] for line in index.splitlines()
                                       if line.startswith("| [")) if i in ids]
    assert text.count("```python") == len(ids) and text.count("Where JAX goes wrong:") == len(ids)


def test_a_report_names_the_jax_function_it_blames_as_file_and_function():
    """A description's private function or rule is found in the installed
    JAX; a public call (jax.jit, pl.run_scoped) or an ambiguous name is not
    blamed; an exception that surfaced where JAX ran the program (a callback's)
    points nowhere, one raised in a rule points there."""
    from fuzz.triage import jax_source
    assert jax_source.named_in("_scan_state_discharge_rule traces the body") == [
        "jax/_src/lax/control_flow/loops.py:_scan_state_discharge_rule"]
    assert jax_source.named_in("NDIndexer.from_indices_shape expands it") == [
        "jax/_src/state/indexing.py:NDIndexer.from_indices_shape"]
    assert jax_source.named_in("jax.jit, pl.run_scoped and jax.new_ref") == []
    assert jax_source.named_in("__init__ is everywhere") == []
    assert reports.blamed_code({"root_cause": "known:scan-over-zero-length-refs"}) == (
        "Blamed", ["jax/_src/lax/control_flow/loops.py:_scan_state_discharge_rule"])
    frames = "jax/_src/state/discharge.py:_discharge_state>jax/_src/state/utils.py:bitcast"
    assert reports.blamed_code({"root_cause": "signature:x", "signature": f"valid-runs|get|E|{frames}"}) \
        == ("Raised in", ["jax/_src/state/utils.py:bitcast"])
    ran = "jax/_src/api.py:block_until_ready>jax/_src/interpreters/pxla.py:__call__"
    assert reports.blamed_code({"root_cause": "signature:x", "signature": f"valid-runs|?|E|{ran}"}) \
        == ("", [])

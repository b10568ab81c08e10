"""Reports: JAX's bug template, a JSON record for machines, an index with status."""
import json
import os

from fuzz import cli, corpus, findings, oracles, reports
from fuzz.known_findings import BY_ID

REQUIRED = {"signature", "oracle", "symptom", "stage", "versions", "first_seen",
            "last_seen", "hits", "paths", "status", "reproducer", "case"}


def _file(tmp_path, known_id):
    failure = oracles.check(BY_ID[known_id].example).failures[0]
    return findings.record(failure, corpus_dir=tmp_path / "corpus",
                           reports_dir=tmp_path / "reports", verify=False)[0]


def test_report_follows_the_bug_template_and_has_a_record(tmp_path):
    finding = _file(tmp_path, "static-index-out-of-bounds-accepted")
    md = (tmp_path / "reports" / f"{finding.id}.md").read_text()
    assert md.index("### Description") < md.index("```python") < md.index("### System info")
    assert "jaxlib" in md.split("### System info")[1]
    assert "runs without any error" in md
    record = json.loads((tmp_path / "reports" / f"{finding.id}.json").read_text())
    assert REQUIRED <= set(record)
    assert record["symptom"] == "missing error" and record["versions"]["jax"]
    index = (tmp_path / "reports" / reports.INDEX).read_text()
    assert f"[{finding.id}]({finding.id}.md) | unverified |" in index   # --no-verify


def test_report_all_marks_a_regression_fixed_when_it_no_longer_fails(tmp_path, capsys):
    finding = _file(tmp_path, "check-sem-avals-last-transform-not-indexer")
    regression = tmp_path / "corpus" / "regressions" / f"{finding.id}.json"
    data = json.loads(regression.read_text())
    data["signature"] = "valid-runs|?|-|gone in this JAX|-"
    regression.write_text(json.dumps(data))
    args = ["report", "--all", "--no-verify", "--corpus-dir", str(tmp_path / "corpus"),
            "--reports-dir", str(tmp_path / "reports")]
    assert cli.main(args) == cli.EXIT_FOUND
    assert json.loads((tmp_path / "reports" / f"{finding.id}.json").read_text())["status"] \
        == "fixed in this JAX"
    assert "| fixed in this JAX |" in (tmp_path / "reports" / reports.INDEX).read_text()


def test_report_cli_files_a_case_and_counts_it_again(tmp_path, capsys):
    regression = corpus.files(os.path.join(os.path.dirname(__file__), os.pardir, "corpus"),
                              "regression")[0]
    args = ["report", "--no-verify", "--corpus-dir", str(tmp_path / "c"),
            "--reports-dir", str(tmp_path / "r"), regression]
    assert cli.main(args) == cli.EXIT_CLEAN and "NEW" in capsys.readouterr().out
    assert cli.main(args) == cli.EXIT_CLEAN and "hits 2" in capsys.readouterr().out

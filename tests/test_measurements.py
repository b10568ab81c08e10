"""fuzz/measurements.py: a benchmark rewrites its own section of
docs/measurements.md and nothing else."""
from __future__ import annotations

import pytest

from fuzz import measurements
from fuzz.measurements import SectionError, write_section

DOC = ("# Measurements\r\n\nIntro, kept as it is: \u00e9 \u2014 `code`\n\n"
       "<!-- begin: bench -->\nold bench table\n<!-- end: bench -->\n\n"
       "## Suite\n<!-- begin: bench_suite -->\nold suite table\n<!-- end: bench_suite -->\n"
       "trailing text, no final newline")


@pytest.fixture
def doc(tmp_path):
    path = tmp_path / "measurements.md"
    path.write_bytes(DOC.encode("utf-8"))
    return path


def test_replaces_only_its_section(doc):
    write_section("bench_suite", "| file | s |\n|---|---|\n| tests/test_ir.py | 1.0 |\n", doc)
    before, _, rest = DOC.partition("<!-- begin: bench_suite -->")
    _, _, after = rest.partition("<!-- end: bench_suite -->")
    assert doc.read_bytes() == (
        before + "<!-- begin: bench_suite -->\n| file | s |\n|---|---|\n"
        "| tests/test_ir.py | 1.0 |\n<!-- end: bench_suite -->" + after).encode("utf-8")


def test_a_name_that_prefixes_another_is_its_own_section(doc):
    write_section("bench", "new bench table", doc)
    text = doc.read_bytes().decode("utf-8")
    assert "<!-- begin: bench -->\nnew bench table\n<!-- end: bench -->" in text
    assert "old suite table" in text and "old bench table" not in text


def test_writing_the_same_twice_is_stable(doc):
    write_section("bench", "table", doc)
    once = doc.read_bytes()
    write_section("bench", "table", doc)
    assert doc.read_bytes() == once


@pytest.mark.parametrize("broken, says", [
    (DOC.replace("<!-- begin: bench_suite -->", ""), "no '<!-- begin: bench_suite -->' marker"),
    (DOC.replace("<!-- end: bench_suite -->", ""), "no '<!-- end: bench_suite -->' marker"),
    (DOC + "\n<!-- end: bench_suite -->", "'<!-- end: bench_suite -->' appears 2 times"),
])
def test_a_broken_section_is_one_clear_line_and_the_file_is_untouched(doc, broken, says):
    doc.write_bytes(broken.encode("utf-8"))
    with pytest.raises(SectionError) as raised:
        write_section("bench_suite", "new", doc)
    message = str(raised.value)
    assert "\n" not in message and says in message and str(doc) in message
    assert doc.read_bytes() == broken.encode("utf-8")


def test_a_missing_file_is_one_clear_line(tmp_path):
    with pytest.raises(SectionError, match="no such file"):
        write_section("bench", "new", tmp_path / "absent.md")


def test_recording_checks_before_measuring_and_writes_what_was_printed(doc, capsys):
    ran = []
    with pytest.raises(SystemExit) as exited:
        with measurements.recording("absent", True, "fuzz.bench", ["5"], path=doc):
            ran.append(True)
    assert exited.value.code == 2 and not ran
    assert "no '<!-- begin: absent -->' marker" in capsys.readouterr().err

    with measurements.recording("bench", True, "fuzz.bench", ["5"], path=doc):
        print("column  cases/s")
    assert "column  cases/s" in capsys.readouterr().out   # still printed
    text = doc.read_bytes().decode("utf-8")
    body = text.split("<!-- begin: bench -->")[1].split("<!-- end: bench -->")[0]
    assert body.startswith("\n`python -m fuzz.bench 5` (JAX ") and "column  cases/s" in body


def test_the_repository_document_has_every_benchmark_section():
    for name in ("bench", "bench_suite", "bench_releases", "bench_campaign_throughput",
                 "bench_campaign_modes", "bench_campaign_memory", "bench_campaign_exposure",
                 "bench_campaign_orphans", "bench_campaign_rediscover", "bench_campaign_swarm"):
        measurements.check_section(name)


def test_take_flag():
    assert measurements.take_flag(["100", "--write-docs"]) == (["100"], True)
    assert measurements.take_flag(["100"]) == (["100"], False)


def test_an_unknown_campaign_benchmark_is_one_clear_line():
    """A mistyped benchmark name is an error naming it, not a KeyError."""
    from fuzz import bench_campaign   # (imports JAX: only this test needs it)
    with pytest.raises(SystemExit, match=r"^error: unknown benchmark 'nosuch' "):
        bench_campaign.main(["nosuch", "1", "1"])

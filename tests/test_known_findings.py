"""One strict expected failure per known finding: when JAX fixes the bug the
test passes, strict xfail turns that red, and the entry must be removed."""
import pytest

from fuzz import known_findings, oracles


@pytest.mark.parametrize("finding", known_findings.KNOWN, ids=lambda k: k.id)
@pytest.mark.xfail(strict=True, reason="known bug in JAX")
def test_known_finding_is_fixed(finding):
    report = oracles.check(finding.example)
    hits = [f for f in report.failures
            if known_findings.match(f, report.failures) is finding]
    assert not hits, f"{finding.id}: {hits[0]}"


def test_known_findings_have_unique_ids_and_valid_patterns():
    import re
    ids = [k.id for k in known_findings.KNOWN]
    assert len(ids) == len(set(ids))
    for k in known_findings.KNOWN:
        for oracle, rx in (*k.symptoms, *k.consequences):
            assert oracle in {c.oracle for c in oracles.ORACLES}
            re.compile(rx)

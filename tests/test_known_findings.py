"""One strict expected failure per known finding: when JAX fixes the bug the
test passes, strict xfail turns that red, and the entry must be removed."""
import pytest

from fuzz import known_findings, oracles


def _expected(k):
    """Strict xfail, raising the oracle exception of one of ``k``'s symptoms."""
    classes = tuple(c for c in oracles.ORACLES if c.oracle in {o for o, _ in k.symptoms})
    return pytest.param(k, id=k.id, marks=pytest.mark.xfail(
        strict=True, reason="known bug in JAX", raises=classes))


@pytest.mark.parametrize("finding", [_expected(k) for k in known_findings.KNOWN])
def test_known_finding_is_fixed(finding):
    """Raises the finding's failure while JAX has the bug; anything else (a
    crash of the fuzzer) fails the suite."""
    report = oracles.check(finding.example)
    hits = [f for f in report.failures
            if known_findings.match(f, report.failures) is finding]
    if hits:
        raise hits[0]


def test_known_findings_have_unique_ids_and_valid_patterns():
    import re
    ids = [k.id for k in known_findings.KNOWN]
    assert len(ids) == len(set(ids))
    for k in known_findings.KNOWN:
        for oracle, rx in (*k.symptoms, *k.consequences):
            assert oracle in {c.oracle for c in oracles.ORACLES}
            re.compile(rx)

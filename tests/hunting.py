"""What the planted-bug tests share: a rule planted wrong, and the hunt in
which Hypothesis finds and shrinks the failure it causes, then the IR
reduction a finding gets."""
import pytest
from hypothesis import HealthCheck, given, seed, settings

from fuzz import compat, findings, known_findings, minimize, oracles


def rule_returning(prim, change):
    """The real discharge rule of ``prim`` with ``change`` applied to each new
    ref value it returns."""
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        return [None if v is None else change(v) for v in new_invals], outs
    return compat.wrap_rule(compat.discharge_rules()[prim], around)


def hunt(cls, names, strategy, *, primitive=None, max_examples=100, statements=3):
    """The failure of class ``cls`` (of ``primitive``, if given) found with
    only the oracles ``names`` running (the others would find the planted bug
    too, and cost time), shrunk to at most ``statements`` statements."""
    @settings(max_examples=max_examples, deadline=None, database=None,
              report_multiple_bugs=False, suppress_health_check=list(HealthCheck))
    @seed(0)
    @given(strategy)
    def prop(case):
        report = oracles.check(case, oracles=names)
        for f in report.failures:
            if (isinstance(f, cls) and primitive in (None, f.primitive)
                    and not known_findings.match(f, report.failures)):
                raise f

    with pytest.raises(cls) as caught:
        prop()
    f = caught.value
    sig = findings.signature(f)
    f.case = minimize.minimize(f.case, lambda c: any(
        findings.signature(g) == sig for g in oracles.check(c, oracles=names).failures)).case
    assert len(f.case.body) <= statements and len(f.case.refs) <= 2, f.case
    return f

"""`check`: one case through the tiers, as a loop over the registered oracles.

1. The paths that only trace and discharge (``abstract``), each run judged
   by the rank-1 oracles. A case that fails here, but for known findings,
   goes no further.
2. The evaluating paths, each run judged the same way; then, for a valid
   case, the model's meaning of it, and every rank-2 and rank-3 oracle
   that applies compares (`fuzz.oracles.base`).

Every failure is then marked with the known finding it is an instance of
(`fuzz.suppressions.known_findings`), and a valid program a path refuses as the
unsupported table lists is recorded as such, not as a failure.
"""
from __future__ import annotations

from fuzz import compat, emit, ir, model, paths
from fuzz.suppressions import known_findings, unsupported
from fuzz.oracles import base, probes
from fuzz.oracles.base import CaseReport


def check(case: ir.Case, on_paths=None, oracles=None,
          unsupported_are_findings=False) -> CaseReport:
    """Run ``case`` through the tiers, on its paths (or those of ``on_paths``
    it has) and with the named ``oracles`` (default: all). All of it under
    ``jax.enable_x64(case.x64)``, as the case's programs say."""
    wanted = base.names() if oracles is None else tuple(oracles)
    with compat.enable_x64(case.x64):
        return _check(case, on_paths, wanted, unsupported_are_findings)


def _check(case, on_paths, oracles, unsupported_are_findings) -> CaseReport:
    emit.begin_case()
    report = CaseReport(case)
    wanted = [p for p in ir.PATHS if p in case.paths and (on_paths is None or p in on_paths)]
    for path in wanted:
        if reason := paths.not_applicable(case, path):
            report.skipped[path] = reason
    wanted = [p for p in wanted if p not in report.skipped]
    for path in (p for p in wanted if not paths.fact(p, "EVALUATES")):
        _run(report, path, unsupported_are_findings)
    # A new failure here goes no further. One that is all known findings
    # does: whatever else the case breaks must still be seen.
    if any(known_findings.match(f, report.failures) is None for f in report.failures):
        return _only(report, oracles)
    report.meaning = model.evaluate(case) if case.valid else None
    report.undefined = report.meaning and report.meaning.undefined
    report.verdict = report.meaning and report.meaning.verdict
    for path in (p for p in wanted if paths.fact(p, "EVALUATES")):
        if paths.fact(path, "BLOCKS_ON_WAIT") and report.undefined and \
                not any(oracle.needs_run(report, path) for oracle in base.registered()):
            # A wait that blocks forever would block this path too.
            report.skipped[path] = f"the program has no meaning: {report.undefined}"
            continue
        _run(report, path, unsupported_are_findings)
    # An invalid program means nothing: only how it fails is judged.
    for oracle in base.registered() if case.valid else ():
        if oracle.RANK < 2 or oracle.oracle not in oracles:
            continue
        if reason := oracle.applies(report):
            report.not_applied[oracle.oracle] = reason
            continue
        report.failures += oracle.compare(report)
    return _only(report, oracles)


def _run(report: CaseReport, path: str, unsupported_are_findings: bool):
    """Run one path under probes, judge it, keep refusals apart as unsupported."""
    with probes.probing() as probe:
        outcome = paths.run(report.case, path)
    report.outcomes.append(outcome)
    found = [f for oracle in base.registered() if oracle.RANK < 2
             for f in oracle.judge(report, outcome, probe)]
    text = paths.first_line(outcome.error) if outcome.error is not None else ""
    for f in found:
        f.case, f.error = report.case, outcome.error
        # Only what the table lists is tolerated; any other refusal of a valid
        # program is a finding (its symptom: "unsupported"). An invalid
        # program refused as the table lists is rejected too: which of two
        # errors comes first, JAX does not say.
        entry = (unsupported.classify(path, text, report.case)
                 if f.oracle in ("valid-runs", "invalid-rejected") else None)
        if entry is not None:
            report.unsupported.append((path, entry, text))
            if not unsupported_are_findings:
                continue
        report.failures.append(f)
    return outcome


def _only(report: CaseReport, oracles) -> CaseReport:
    """The failures of the named ``oracles``, each marked with the known
    finding it is an instance of (fuzz/suppressions/known_findings.py), if any:
    matched among all of them, as a consequence needs its symptom's failure,
    which may be another oracle's."""
    everything = report.failures
    report.failures = [f for f in everything if f.oracle in oracles]
    for f in report.failures:
        k = known_findings.match(f, everything)
        f.known = k.id if k is not None else None
    return report

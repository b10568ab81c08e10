"""Oracles: turn what the paths and probes saw into failures.

Each oracle has its own exception class, subclassed per primitive, so that
Hypothesis (which tells bugs apart by exception type) and a reader keep
distinct bugs apart. Every message names the path, the primitive and the
shapes involved, so one line says what broke.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fuzz import ir, paths, probes


class OracleFailure(AssertionError):
    """A broken invariant on one path of one case."""
    oracle = "oracle"

    def __init__(self, message: str, *, primitive: str, path: str):
        super().__init__(f"[{self.oracle}] {path}: {message}")
        self.message, self.primitive, self.path = message, primitive, path
        self.case: ir.Case | None = None
        self.error: BaseException | None = None  # the JAX exception, if one was raised

    @property
    def signature(self) -> str:
        """Oracle, primitive and the message with numbers normalized."""
        return f"{self.oracle}|{self.primitive}|{re.sub(r'-?[0-9]+', 'N', self.message)}"


class SeedInvariantViolation(OracleFailure):
    """``_transform_semaphore`` saw a value whose shape is neither its aval's nor ()."""
    oracle = "seed-invariant"


class AvalNotPreserved(OracleFailure):
    """A discharge rule returned a new ref value of another shape or dtype."""
    oracle = "aval-preserved"


class AbstractConcreteMismatch(OracleFailure):
    """What a path produced differs from what abstract evaluation promised."""
    oracle = "abstract-concrete"


class UnexpectedError(OracleFailure):
    """A valid case raised."""
    oracle = "valid-runs"


class SilentAcceptance(OracleFailure):
    """An invalid case ran without the error a user should get."""
    oracle = "invalid-rejected"


class WrongError(OracleFailure):
    """An invalid case raised, but not the clean error a user should get."""
    oracle = "invalid-rejected"


ORACLES = (SeedInvariantViolation, AvalNotPreserved, AbstractConcreteMismatch,
           UnexpectedError, SilentAcceptance, WrongError)
_per_primitive: dict[tuple[type, str], type] = {}


def failure(cls: type[OracleFailure], primitive: str, path: str, message: str) -> OracleFailure:
    """An instance of ``cls``'s subclass for ``primitive`` (made once)."""
    key = (cls, primitive)
    if key not in _per_primitive:
        _per_primitive[key] = type(f"{cls.__name__}[{primitive}]", (cls,),
                                   {"__module__": __name__})
    return _per_primitive[key](message, primitive=primitive, path=path)


@dataclass
class CaseReport:
    case: ir.Case
    outcomes: list[paths.Outcome] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failures: list[OracleFailure] = field(default_factory=list)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def _fmt(aval) -> str:
    shape, dtype = aval
    return f"{dtype}[{','.join(map(str, shape))}]"


def judge(case: ir.Case, outcome: paths.Outcome, probe: probes.Probe) -> list[OracleFailure]:
    """Every failure one path's run of ``case`` shows, most specific first."""
    path = outcome.path
    # The seed invariant first: it is JAX's own assertion, where JAX itself
    # would notice a wrong value; strict violations usually explain it.
    violations = sorted(probe.violations, key=lambda v: v.invariant != "seed")
    found = [failure(SeedInvariantViolation if v.invariant == "seed" else AvalNotPreserved,
                     v.primitive, path, v.message) for v in violations]
    if outcome.error is None:
        for name, declared, promised, produced in zip(
                outcome.names, outcome.declared, outcome.promised, outcome.produced):
            if produced != promised or produced != declared:
                found.append(failure(AbstractConcreteMismatch, "?", path, (
                    f"final {name} is {_fmt(produced)}; abstract evaluation promised "
                    f"{_fmt(promised)} for a ref declared {_fmt(declared)}")))
        if len(outcome.produced) != len(outcome.declared):
            found.append(failure(AbstractConcreteMismatch, "?", path, (
                f"{len(outcome.produced)} results for {len(outcome.declared)} refs")))
    primitive = probe.failed_in or _primitive_in_traceback(outcome.error)
    if case.valid:
        if outcome.error is not None:
            found.append(failure(UnexpectedError, primitive, path,
                                 _first_line(outcome.error)))
    elif outcome.error is None:
        found.append(failure(SilentAcceptance, case.expect.primitive, path, (
            f"{case.expect.primitive} ran without error; expected "
            f"{case.expect.type} matching {case.expect.match!r}")))
    elif not matches(case.expect, outcome.error):
        found.append(failure(WrongError, case.expect.primitive, path, (
            f"{_first_line(outcome.error)}; expected {case.expect.type} "
            f"matching {case.expect.match!r} from {case.expect.primitive}")))
    for f in found:
        f.case, f.error = case, outcome.error
    return found


_PRIMITIVE_IN_FRAME = re.compile(r"(semaphore_(?:signal|wait|read))")


def _primitive_in_traceback(error: BaseException | None) -> str:
    """The semaphore primitive whose rule (abstract eval, discharge, ...) the
    error passed through last, or "?"."""
    found, tb = "?", error.__traceback__ if error is not None else None
    while tb is not None:
        if m := _PRIMITIVE_IN_FRAME.search(tb.tb_frame.f_code.co_name):
            found = m.group(1)
        tb = tb.tb_next
    return found


def matches(expect: ir.ExpectedError, error: BaseException) -> bool:
    names = {c.__name__ for c in type(error).__mro__}
    return bool(names & set(expect.type.split("|"))) and re.search(expect.match, str(error)) is not None


def check(case: ir.Case, on_paths=None) -> CaseReport:
    """Run ``case`` on each of its paths (or ``on_paths``) under probes."""
    report = CaseReport(case)
    for path in on_paths or case.paths:
        if path not in case.paths:
            continue
        reason = paths.not_applicable(case, path)
        if reason:
            report.skipped[path] = reason
            continue
        with probes.probing() as probe:
            outcome = paths.run(case, path)
        report.outcomes.append(outcome)
        report.failures += judge(case, outcome, probe)
    return report

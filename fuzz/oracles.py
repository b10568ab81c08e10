"""Oracles: turn what the paths, probes, the model and the metamorphic
reruns saw into failures, and `check`: one case through every tier.

Each oracle has its own exception class, subclassed per primitive, so that
Hypothesis (which tells bugs apart by exception type) and a reader keep
distinct bugs apart. Every message names the path, the primitive and the
shapes involved, so one line says what broke.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from fuzz import (blame, compat, differential, emit, ir, known_findings, metamorphic, model,
                  paths, probes, unsupported)


class OracleFailure(AssertionError):
    """A broken invariant on one path of one case.

    Each oracle's class carries the facts that findings, reports and
    reproducers read about its failures, so that adding an oracle is adding
    a class: its ``symptom`` (what a user sees), its ``stage`` (where in JAX
    it breaks, or None: read off the error's frames), whether the JAX
    exception *is* the failure (``error_is_the_symptom``: its type and
    frames name the bug), whether a reproducer compares values with the
    model's (``wrong_value``) and runs under ``jax.jit`` (``under_jit``), and
    ``summary``, its plain words for a report."""
    oracle = "oracle"
    symptom = "wrong value"
    stage: str | None = "execution"
    error_is_the_symptom = False
    wrong_value = False
    under_jit = False
    fatal = False   # the process dying (or hanging) is the bug: `findings.Crash`
    summary = "the `{oracle}` oracle failed: {message}"

    def __init__(self, message: str, *, primitive: str, path: str, details: str = "",
                 statement: int | None = None, shape: str | None = None,
                 seen_at: int | None = None, raised: str | None = None):
        # ``message`` is one line and names the bug; ``details`` (the program,
        # expected vs actual) is for a reader and varies from case to case.
        super().__init__(f"[{self.oracle}] {path}: {message}" + (f"\n{details}" if details else ""))
        self.message, self.primitive, self.path = message, primitive, path
        self.details = details
        self.statement = statement   # the statement to blame (fuzz/blame.py), if known
        self.shape = shape           # a wrong value's shape of failure (fuzz/differential.py)
        self.seen_at = seen_at       # where a wrong value is seen, if later than ``statement``
        self.raised = raised         # a comparison's side that raised (the other ran)
        self.case: ir.Case | None = None
        self.error: BaseException | None = None  # the JAX exception, if one was raised
        self.known: str | None = None   # the known finding it is an instance of (`check`)

    def symptom_of(self) -> str:
        # e.g. an exception under jax.jit where the eager run works
        return "exception" if self.raised and self.symptom == "wrong value" else self.symptom


class SeedInvariantViolation(OracleFailure):
    """``_transform_semaphore`` saw a value whose shape is neither its aval's nor ()."""
    oracle = "seed-invariant"
    symptom, stage = "invariant violation", "discharge"
    summary = ("while discharging, `_transform_semaphore` was handed a semaphore value "
               "whose shape is neither the ref's aval shape nor `()` (the assertion in "
               "`jax/_src/pallas/primitives.py`): {message}")


class AvalNotPreserved(OracleFailure):
    """A discharge rule returned a new ref value of another shape or dtype."""
    oracle = "aval-preserved"
    symptom, stage = "invariant violation", "discharge"
    summary = ("the discharge rule of `{primitive}` returned a new value for a ref with "
               "another shape or dtype than the ref's own aval; every discharge rule must "
               "keep each ref's aval: {message}")


class EffectsMismatch(OracleFailure):
    """A discharge rule updated a ref its primitive does not declare it writes."""
    oracle = "effects"
    symptom, stage = "invariant violation", "discharge"
    summary = ("the discharge rule of `{primitive}` returned a new value for a ref that "
               "the primitive's declared effects do not write or accumulate into; a "
               "primitive's effects must cover every ref its discharge updates: {message}")


class AbstractConcreteMismatch(OracleFailure):
    """What a path produced differs from what abstract evaluation promised."""
    oracle = "abstract-concrete"
    stage = "discharge"
    summary = ("the discharged program produced results whose avals differ from what "
               "abstract evaluation promised: {message}")


class UnexpectedError(OracleFailure):
    """A valid case raised."""
    oracle = "valid-runs"
    symptom, stage, error_is_the_symptom = "exception", None, True
    summary = ("a valid kernel (every index in bounds, every semaphore view `()`-shaped, "
               "every stored value of the view's shape and the ref's dtype) "
               "raised `{message}`")

    def symptom_of(self) -> str:
        text = paths.first_line(self.error) if self.error is not None else ""
        # A refusal the unsupported table does not list.
        return "unsupported" if unsupported.says_unsupported(text) else self.symptom


class SilentAcceptance(OracleFailure):
    """An invalid case ran without the error a user should get."""
    oracle = "invalid-rejected"
    symptom, stage, error_is_the_symptom = "missing error", "trace", True
    summary = ("an invalid use of `{primitive}` should be rejected with {wanted}, but runs "
               "without any error")


class WrongError(OracleFailure):
    """An invalid case raised, but not the clean error a user should get."""
    oracle = "invalid-rejected"
    symptom, stage, error_is_the_symptom = "exception", None, True
    summary = ("an invalid use of `{primitive}` should be rejected with {wanted}, but fails "
               "with an unrelated error instead: {error}")


class ModelMismatch(OracleFailure):
    """A path computed other reads or counts than the reference model."""
    oracle = "model-vs-path"
    wrong_value = True


class PathMismatch(OracleFailure):
    """Two paths disagree on the same case."""
    oracle = "path-vs-path"
    wrong_value = True


class JitMismatch(OracleFailure):
    """A path under jax.jit differs from the same path run eagerly."""
    oracle = "jit-eager"
    wrong_value = under_jit = True


class VmapMismatch(OracleFailure):
    """vmap of a program (pallas_call, the eager new_ref program) differs from
    its calls one by one."""
    oracle = "vmap-stack"


class PartialDischargeMismatch(OracleFailure):
    """Discharging some refs differs from discharging all of them."""
    oracle = "partial-discharge"
    stage = "discharge"
    summary = ("discharging all refs but one (`should_discharge`) does not agree with "
               "discharging them all: {message}")


class ChainMismatch(OracleFailure):
    """A program differs from itself with every view re-expressed as one index."""
    oracle = "chain-equivalence"
    wrong_value = True


class GradMismatch(OracleFailure):
    """Derivatives through refs disagree with finite differences (or raise)."""
    oracle = "grad-matches"
    under_jit = True


class UnrolledMismatch(OracleFailure):
    """A program with loops or conds differs from itself unrolled."""
    oracle = "control-unrolled"
    wrong_value = True


class InterpretOptionsMismatch(OracleFailure):
    """The TPU interpreter gives a race-free program another meaning under
    other ``InterpretParams`` (DMA execution mode, uninitialized memory)."""
    oracle = "interpret-options"
    wrong_value = True


class RaceDetectionMismatch(OracleFailure):
    """The TPU interpreter's race detector disagrees with the model: it sees
    a race in a race-free program, or misses one between the kernel and a
    copy in flight."""
    oracle = "race-detection"


class LeftoverMissed(OracleFailure):
    """A kernel that ends with a copy never waited on (its DMA semaphore
    non-zero) runs with no word of the count left over, which JAX documents
    as a crash on hardware."""
    oracle = "left-over-counts"


# The oracles that compare runs (fuzz/differential.py, fuzz/metamorphic.py).
_COMPARING = (ModelMismatch, PathMismatch, JitMismatch, VmapMismatch, ChainMismatch,
              UnrolledMismatch, GradMismatch, PartialDischargeMismatch,
              InterpretOptionsMismatch, RaceDetectionMismatch, LeftoverMissed)
ORACLES = (SeedInvariantViolation, AvalNotPreserved, EffectsMismatch, AbstractConcreteMismatch,
           UnexpectedError, SilentAcceptance, WrongError, *_COMPARING)
ORACLE_NAMES = tuple(dict.fromkeys(c.oracle for c in ORACLES))
_BY_NAME = {c.oracle: c for c in _COMPARING}


def class_of(oracle: str, raised: bool = False) -> type[OracleFailure]:
    """The class of ``oracle``'s failures (of invalid-rejected: the one that
    ``raised`` an exception, or the one that ran without)."""
    if oracle == "invalid-rejected":
        return WrongError if raised else SilentAcceptance
    return next(c for c in ORACLES if c.oracle == oracle)


_per_primitive: dict[tuple[type, str], type] = {}


def failure(cls: type[OracleFailure], primitive: str, path: str, message: str,
            details: str = "", **facts) -> OracleFailure:
    """An instance of ``cls``'s subclass for ``primitive`` (made once);
    ``facts``: ``statement``, ``shape``, ``seen_at``."""
    key = (cls, primitive)
    if key not in _per_primitive:
        _per_primitive[key] = type(f"{cls.__name__}[{primitive}]", (cls,),
                                   {"__module__": __name__})
    return _per_primitive[key](message, primitive=primitive, path=path, details=details,
                               **facts)


@dataclass
class CaseReport:
    case: ir.Case
    outcomes: list[paths.Outcome] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)       # path -> why
    failures: list[OracleFailure] = field(default_factory=list)
    undefined: str | None = None      # why the model gives the case no meaning
    verdict: str | None = None        # the model's verdict (`model.Meaning.verdict`)
    # Valid programs a path refused as the unsupported table lists: (path, entry, error).
    unsupported: list[tuple[str, unsupported.Unsupported, str]] = field(
        default_factory=list)
    not_applied: dict[str, str] = field(default_factory=dict)   # oracle -> why
    # Comparing oracles that compared values on this case: name -> how often.
    compared: dict[str, int] = field(default_factory=dict)

    def count(self, oracle: str, n: int = 1):
        self.compared[oracle] = self.compared.get(oracle, 0) + n

def _fmt(aval) -> str:
    shape, dtype = aval
    return f"{dtype}[{','.join(map(str, shape))}]"


def judge(case: ir.Case, outcome: paths.Outcome, probe: probes.Probe) -> list[OracleFailure]:
    """Every failure one path's run of ``case`` shows, most specific first."""
    path = outcome.path
    # The seed invariant first: it is JAX's own assertion, where JAX itself
    # would notice a wrong value; strict violations usually explain it.
    violations = sorted(probe.violations, key=lambda v: v.invariant != "seed")
    by_invariant = {"seed": SeedInvariantViolation, "strict": AvalNotPreserved,
                    "effects": EffectsMismatch}
    found = [failure(by_invariant[v.invariant], v.primitive, path, v.message,
                     statement=v.statement) for v in violations]
    if outcome.error is None:
        for name, declared, promised, produced in zip(
                outcome.names, outcome.declared, outcome.promised, outcome.produced):
            if produced != promised or produced != declared:
                found.append(failure(AbstractConcreteMismatch, "?", path, (
                    f"final {name} is {_fmt(produced)}; abstract evaluation promised "
                    f"{_fmt(promised)} for a ref declared {_fmt(declared)}")))
        found += _value_shapes(case, outcome)
        if len(outcome.produced) != len(outcome.declared):
            found.append(failure(AbstractConcreteMismatch, "?", path, (
                f"{len(outcome.produced)} results for {len(outcome.declared)} refs")))
    primitive = probe.failed_in or _primitive_in_traceback(outcome.error)
    # Where the error was raised: tracing a statement, or discharging (or
    # lowering) one of its equations.
    at = blame.of_error(outcome.error)
    at = probe.failed_at if at is None else at
    if case.valid:
        if outcome.error is not None:
            found.append(failure(UnexpectedError, primitive, path,
                                 paths.first_line(outcome.error), statement=at))
    elif outcome.error is None:
        found.append(failure(SilentAcceptance, case.expect.primitive, path, (
            f"{case.expect.primitive} ran without error; expected "
            f"{case.expect.type} matching {case.expect.match!r}")))
    elif not matches(case.expect, outcome.error):
        found.append(failure(WrongError, case.expect.primitive, path, (
            f"{paths.first_line(outcome.error)}; expected {case.expect.type} "
            f"matching {case.expect.match!r} from {case.expect.primitive}"), statement=at))
    for f in found:
        f.case, f.error = case, outcome.error
    return found


def _value_shapes(case: ir.Case, outcome: paths.Outcome) -> list[OracleFailure]:
    """A value's abstract aval against what NumPy gives for the same index
    (``arr[idx].shape``) and the ref's dtype."""
    found = []
    for k, got in sorted(outcome.value_avals.items()):
        stmt = case.statements[k]
        if not stmt.produces_value:
            continue
        try:
            want = stmt.value_type(case)
        except ir.IRError:
            continue   # an invalid view has no NumPy shape
        if got != want:
            found.append(failure(AbstractConcreteMismatch, stmt.primitive, outcome.path, (
                f"the value of {stmt.tag} is {_fmt(got)}; NumPy's arr[idx] of the same "
                f"view is {_fmt(want)}"), statement=k))
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


def _from(case, mismatches) -> list[OracleFailure]:
    found = [failure(_BY_NAME[m.oracle], m.primitive, m.path, m.message, m.details,
                     statement=m.statement, shape=m.shape, seen_at=m.seen_at, raised=m.raised)
             for m in mismatches]
    for f in found:
        f.case = case
    return found


def _run(report: CaseReport, path: str, unsupported_are_findings: bool):
    """Run one path under probes; judge it; keep refusals apart as unsupported."""
    with probes.probing() as probe:
        outcome = paths.run(report.case, path)
    report.outcomes.append(outcome)
    for f in judge(report.case, outcome, probe):
        text = paths.first_line(outcome.error) if outcome.error is not None else ""
        # Only what the table lists is tolerated; any other refusal of a valid
        # program is a finding (its symptom: "unsupported").
        entry = (unsupported.classify(path, text, report.case)
                 if isinstance(f, UnexpectedError) else None)
        if entry is not None:
            report.unsupported.append((path, entry, text))
            if not unsupported_are_findings:
                continue
        report.failures.append(f)
    return outcome


def check(case: ir.Case, on_paths=None, oracles=ORACLE_NAMES,
          unsupported_are_findings=False) -> CaseReport:
    """Run ``case`` through the tiers, on its paths (or those of ``on_paths``
    it has) and with the named ``oracles``:

    1. the abstract path and its shape oracles; a case that fails here (but
       for known findings) goes no further;
    2. each evaluating path, with the shape oracles, against the reference
       model and against the other paths;
    3. the metamorphic reruns (jit, vmap, an equivalent transform chain).

    All of it under ``jax.enable_x64(case.x64)``, as the case's programs say.
    """
    with compat.enable_x64(case.x64):
        return _check(case, on_paths, oracles, unsupported_are_findings)


def _check(case, on_paths, oracles, unsupported_are_findings) -> CaseReport:
    emit.begin_case()
    report = CaseReport(case)
    wanted = [p for p in ir.PATHS if p in case.paths and (on_paths is None or p in on_paths)]
    for path in wanted:
        if reason := paths.not_applicable(case, path):
            report.skipped[path] = reason
    wanted = [p for p in wanted if p not in report.skipped]
    if "abstract" in wanted:
        _run(report, "abstract", unsupported_are_findings)
        # A new failure here goes no further. One that is all known findings
        # does: whatever else the case breaks must still be seen.
        if any(known_findings.match(f, report.failures) is None for f in report.failures):
            return _only(report, oracles)
    meaning = model.evaluate(case) if case.valid else None
    report.undefined = meaning and meaning.undefined
    report.verdict = meaning and meaning.verdict
    ran = []
    for path in (p for p in wanted if p in paths.EVALUATING):
        if paths.variant_of(path) == "tpu_interpret" and report.undefined and \
                not differential.promises(meaning, path):
            # A wait that blocks forever would block this interpreter too.
            report.skipped[path] = f"the program has no meaning: {report.undefined}"
            continue
        ran.append(_run(report, path, unsupported_are_findings))
    fine = [o for o in ran if o.error is None]
    if meaning is not None and {"model-vs-path", "left-over-counts"} & set(oracles):
        for o in fine:
            if meaning.undefined and not (meaning.lockstep and paths.lockstep(o.path)):
                continue
            report.failures += _from(case, differential.against_model(case, meaning, o))
            report.count("model-vs-path")
    if meaning is not None:
        report.failures += _from(case, differential.promised(case, meaning, fine))
    # An invalid program means nothing; a racy one, or one that ends with a
    # copy in flight, may differ from path to path.
    if {"path-vs-path", "interpret-options"} & set(oracles) and case.valid and \
            meaning.verdict not in ("racy", "unwaited"):
        report.failures += _from(case, differential.between_paths(case, fine))
        report.count("path-vs-path", len(fine) > 1)
    if case.valid:
        _metamorphic(report, fine, oracles)
        _partial(report, oracles)
    return _only(report, oracles)


def _metamorphic(report: CaseReport, fine, oracles):
    """The metamorphic reruns of the paths that ran ``case`` without error."""
    case = report.case
    for o in (o for o in fine if o.path in metamorphic.EAGER_PATHS):
        if "jit-eager" in oracles and o.path in metamorphic.JIT_PATHS:
            mismatches, compared = metamorphic.jit_vs_eager(case, o)
            report.failures += _from(case, mismatches)
            report.count("jit-eager", compared)
        if "chain-equivalence" in oracles:
            report.failures += _from(case, metamorphic.chain_equivalence(case, o))
            report.count("chain-equivalence")
        if "control-unrolled" in oracles and any(s.block_fields for s in case.body):
            report.failures += _from(case, metamorphic.control_unrolled(case, o))
            report.count("control-unrolled")
    for o in (o for o in fine if o.path in metamorphic.GRAD_PATHS and "grad-matches" in oracles):
        if reason := metamorphic.grad_applies(case, o.path):
            report.not_applied["grad-matches"] = reason
        else:
            report.failures += _from(case, metamorphic.grad_matches(case, o))
            report.count("grad-matches")
    batched = [o.path for o in fine if o.path in metamorphic.VMAP_PATHS]
    for path in batched if "vmap-stack" in oracles else ():
        if reason := metamorphic.vmap_applies(case, path):
            report.not_applied["vmap-stack"] = reason
        else:
            report.failures += _from(case, metamorphic.vmap_vs_stack(case, path))
            report.count("vmap-stack")


def _partial(report: CaseReport, oracles):
    """partial-discharge, on a case whose abstract run went through."""
    traced = next((o for o in report.outcomes if o.path == "abstract" and o.error is None), None)
    if "partial-discharge" not in oracles or traced is None:
        return
    if reason := metamorphic.partial_applies(report.case):
        report.not_applied["partial-discharge"] = reason
        return
    if any(f.path == "abstract" and f.oracle in ("aval-preserved", "abstract-concrete")
           for f in report.failures):
        # (a known finding's, or the tiers would have stopped)
        report.not_applied["partial-discharge"] = (
            "its full discharge already gives a ref of the wrong aval, which a partial one "
            "cannot agree with (evaluating it, JAX 0.9.1 to 0.10.2 abort the process)")
        return
    try:
        report.failures += _from(report.case, metamorphic.partial_discharge(report.case, traced))
    except Exception as e:  # noqa: BLE001 - a partial discharge that raises is a finding
        report.failures += _from(report.case, [differential.Mismatch(
            "partial-discharge", "?", "abstract", f"partial discharge raised {paths.first_line(e)}",
            "", shape=f"raised {type(e).__name__}")])
    report.count("partial-discharge")


def _only(report: CaseReport, oracles) -> CaseReport:
    """The failures of the named ``oracles``, each marked with the known
    finding it is an instance of (fuzz/known_findings.py), if any."""
    report.failures = [f for f in report.failures if f.oracle in oracles]
    for f in report.failures:
        k = known_findings.match(f, report.failures)
        f.known = k.id if k is not None else None
    return report

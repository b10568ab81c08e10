"""What every oracle shares: the failure base class and its registry, the
report of one case, and the helpers that compare and show values.

An oracle is one class, a subclass of `OracleFailure`, in one module of this
package. Defining it registers it (`__init_subclass__`), under its name
(``oracle``); the tiers (`fuzz.oracles.tiers.check`) run every registered
oracle in the order of its ``RANK``:

- ``judge(report, outcome, probe)``: rank 1.x, on each path's run as it ends
  (with what the probes recorded while it ran); ``needs_run(report, path)``:
  whether it needs a path run that the model's verdict would skip;
- ``applies(report)`` (None, or why not) and ``compare(report)``: rank 2.x
  compares the runs with the model and with each other, rank 3.x reruns the
  program other ways (jit, vmap, grad, rewrites), which costs a run or more.

Both return failures of the oracle's own class (`fail`). ``COST`` says, in
runs of the case's program, what one ``compare`` costs (a scheduler's
figure); the class's facts (``symptom``, ``stage``, ``summary``, ...) are
what findings, reports and reproducers read about its failures, with
``severity`` (a maintainer's class for one) and ``comparison`` (how a
reproducer shows one that the model's values cannot: `Comparison`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from fuzz import emit, ir, model, paths
from fuzz.severity import SEVERITIES
from fuzz.suppressions import unsupported

_REGISTRY: dict[str, list[type[OracleFailure]]] = {}
_ORDERED: list[type[OracleFailure]] = []   # `registered`, made once after each registration


class OracleFailure(AssertionError):
    """A broken invariant on one path of one case.

    Facts about its failures: ``symptom`` (what a user sees), ``stage``
    (where in JAX it breaks, or None: read off the error's frames), whether
    the JAX exception *is* the failure (``error_is_the_symptom``: its type
    and frames name the bug), whether a reproducer compares values with the
    model's (``wrong_value``) and runs under ``jax.jit`` (``under_jit``),
    whether the process dying is the bug (``fatal``), and ``summary``, its
    plain words for a report."""
    oracle = "oracle"
    symptom = "wrong value"
    stage: str | None = "execution"
    error_is_the_symptom = False
    wrong_value = False
    under_jit = False
    fatal = False
    # Whether its failures are seen only inside JAX (what a rule returned,
    # caught by a probe), not through public API: a report files another
    # face of the same bug first, where there is one.
    inside_jax = False
    summary = "the `{oracle}` oracle failed: {message}"
    RANK = 0.0   # where in the tiers it runs (see the module's docstring)
    COST = 0     # runs of the program one `compare` costs
    # Whose rules a wrong value it sees blames (`fuzz.triage.isolate`): a
    # transformation's it reruns the program under ("batching"), or None:
    # the rules of the path that computed it.
    RULES: str | None = None

    def __init__(self, message: str, *, primitive: str, path: str, details: str = "",
                 statement: int | None = None, shape: str | None = None,
                 seen_at: int | None = None, raised: BaseException | None = None):
        # ``message`` is one line and names the bug; ``details`` (the program,
        # expected vs actual) is for a reader and varies from case to case.
        super().__init__(f"[{self.oracle}] {path}: {message}" + (f"\n{details}" if details else ""))
        self.message, self.primitive, self.path = message, primitive, path
        self.details = details
        self.statement = statement   # the statement to blame (fuzz/blame.py), if known
        # A wrong value's shape of failure, which its signature keeps instead
        # of the message: what is observed, through which kind of statement,
        # and how it relates to the right value (`relation`).
        self.shape = shape
        self.seen_at = seen_at       # where a wrong value is seen, if later than ``statement``
        self.raised = raised         # what a comparison's side raised (the other ran)
        self.case: ir.Case | None = None
        self.error: BaseException | None = None  # the JAX exception, if one was raised
        self.known: str | None = None   # the known finding it is an instance of (`check`)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # An oracle's own class registers; its per-primitive subclasses
        # (`fail`) do not.
        if "oracle" in cls.__dict__:
            _REGISTRY.setdefault(cls.oracle, []).append(cls)
            _ORDERED.clear()

    def symptom_of(self) -> str:
        # e.g. an exception under jax.jit where the eager run works
        return "exception" if self.raised and self.symptom == "wrong value" else self.symptom

    @classmethod
    def severity(cls, symptom: str) -> str:
        """Its finding's class for a maintainer (one of `SEVERITIES`), given
        the finding's symptom (`symptom_of`): a valid program that raises
        crashes; one refused as unsupported is refused; else a value (or an
        invariant discharge keeps silently) is wrong."""
        if symptom == "unsupported":
            return SEVERITIES[2]
        return SEVERITIES[1] if symptom == "exception" else SEVERITIES[0]

    # --- what the tiers call (each oracle overrides what it does) ------------

    @classmethod
    def judge(cls, report: CaseReport, outcome: paths.Outcome, probe) -> list[OracleFailure]:
        """The failures of one path's run, as it ends."""
        return []

    @classmethod
    def needs_run(cls, report: CaseReport, path: str) -> bool:
        """Whether it needs ``path`` run though the model gives the program
        no meaning (a path that blocks on a wait that never completes is
        otherwise not run)."""
        return False

    @classmethod
    def applies(cls, report: CaseReport) -> str | None:
        """Why `compare` does not apply to the case (None: it does)."""
        return None

    @classmethod
    def compare(cls, report: CaseReport) -> list[OracleFailure]:
        """The failures the case shows when its runs are compared."""
        return []

    @classmethod
    def comparison(cls, case: ir.Case, path: str) -> Comparison | None:
        """How a reproducer shows this oracle's failure on ``path``: Python
        that calls what the oracle called (`Comparison`); None where the
        reproducer compares with the model's values (or avals, or the clean
        error), as it does for most oracles."""
        return None

    # --- making failures ------------------------------------------------------

    _per_primitive: dict[tuple[type, str], type] = {}

    @classmethod
    def fail(cls, case: ir.Case | None, primitive: str, path: str, message: str,
             details: str = "", **facts) -> OracleFailure:
        """A failure of this oracle, as an instance of its subclass for
        ``primitive`` (made once), so that Hypothesis, which tells bugs apart
        by exception type, keeps one primitive's apart from another's.
        ``facts``: ``statement``, ``shape``, ``seen_at``, ``raised``."""
        key = (cls, primitive)
        if key not in cls._per_primitive:
            cls._per_primitive[key] = type(f"{cls.__name__}[{primitive}]", (cls,),
                                           {"__module__": cls.__module__})
        f = cls._per_primitive[key](message, primitive=primitive, path=path, details=details,
                                    **facts)
        f.case = case
        return f


@dataclass(frozen=True)
class Comparison:
    """What an oracle ran, as Python a reproducer and a snippet run after the
    program's ``function()``: ``source`` defines ``expected()`` and
    ``actual()``, each returning what it computes as plain lists (a side
    that raises shows the bug too); ``expected_by`` and ``actual_by`` say in
    words what each side is ("the calls one by one", "jax.vmap"). The oracle
    runs this very source, so what a report shows is what it compared."""
    source: str
    expected_by: str
    actual_by: str
    tolerance: float | None = None   # numbers this close are equal (None: exactly)

    def run(self, namespace: dict) -> dict:
        """``namespace`` (a program's, `fuzz.paths.load`) with the source run in it."""
        exec(compile(self.source, f"<{self.actual_by} against {self.expected_by}>", "exec"),  # noqa: S102
             namespace)
        return namespace


def literal(value) -> str:
    """``value`` (an array) as Python source that makes it again, exactly."""
    x = np.asarray(value)
    if x.size == 0:   # (tolist() keeps no shape of an empty array: [] for (0, 0))
        return f"np.zeros({x.shape!r}, jnp.dtype({str(x.dtype)!r}))"
    text = re.sub(r"\b(nan|inf)\b", r"float('\1')", repr(x.tolist()))
    return f"np.asarray({text}, jnp.dtype({str(x.dtype)!r}))"


def registered() -> list[type[OracleFailure]]:
    """Every oracle class, in the order the tiers run them."""
    if not _ORDERED:
        _ORDERED.extend(sorted((c for classes in _REGISTRY.values() for c in classes),
                               key=lambda c: (c.RANK, c.oracle, c.__name__)))
    return _ORDERED


def names() -> tuple[str, ...]:
    """Every oracle's name, in the order the tiers run them."""
    return tuple(dict.fromkeys(c.oracle for c in registered()))


def class_of(oracle: str, raised: bool = False) -> type[OracleFailure]:
    """The class of ``oracle``'s failures; of an oracle with two (one whose
    failure is an exception, one whose is not), the one that ``raised``."""
    classes = _REGISTRY[oracle]
    if len(classes) == 1:
        return classes[0]
    return next(c for c in classes if (c.symptom == "exception") == raised)


@dataclass
class CaseReport:
    """One case through the tiers: every run, and what the oracles made of them."""
    case: ir.Case
    outcomes: list[paths.Outcome] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)       # path -> why
    failures: list[OracleFailure] = field(default_factory=list)
    meaning: model.Meaning | None = None   # the model's, of a valid case
    undefined: str | None = None      # why the model gives the case no meaning
    verdict: str | None = None        # the model's verdict (`model.Meaning.verdict`)
    # Valid programs a path refused as the unsupported table lists: (path, entry, error).
    unsupported: list[tuple[str, unsupported.Unsupported, str]] = field(
        default_factory=list)
    not_applied: dict[str, str] = field(default_factory=dict)   # oracle -> why
    # Comparing oracles that compared values on this case: name -> how often.
    compared: dict[str, int] = field(default_factory=dict)
    # What JAX did only because of the fuzzer's own stand-ins (an int16
    # array for a semaphore, which JAX takes in interpret mode only): no JAX
    # bug, so counted here, never a failure. What -> how often.
    artifacts: dict[str, int] = field(default_factory=dict)

    def count(self, oracle: str, n: int = 1):
        self.compared[oracle] = self.compared.get(oracle, 0) + n

    @property
    def fine(self) -> list[paths.Outcome]:
        """The evaluating paths' runs that raised nothing, in path order."""
        return [o for o in self.outcomes if o.error is None and paths.fact(o.path, "EVALUATES")]


# --- comparing and showing values ---------------------------------------------

def nan_same(x):
    """``x`` (results: arrays, or lists, tuples and dicts of them) as plain
    lists, each NaN the string "nan": a NaN is the same value as any other
    NaN (a bitcast view may make one, and which NaN bits XLA keeps, JAX
    does not say). Reproducers compare their two sides with it too."""
    if hasattr(x, "tolist") and not isinstance(x, (bool, int, float)):
        x = x.tolist()
    if isinstance(x, dict):
        return {k: nan_same(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [nan_same(v) for v in x]
    return "nan" if isinstance(x, float) and x != x else x


def same(a, b) -> bool:
    """Equal sequences of arrays: shapes and elements (NaN equal to NaN)."""
    return len(a) == len(b) and all(
        np.shape(x) == np.shape(y) and nan_same(x) == nan_same(y) for x, y in zip(a, b))


def show(values) -> list:
    return [np.asarray(v).tolist() for v in values]


def observed(o: paths.Outcome) -> tuple:
    """What a run shows of the program (not the inputs it was given)."""
    return (list(o.reads or ()), {i: nan_same(np.asarray(x)) for i, x in (o.state or {}).items()})


def describe(o: paths.Outcome) -> str:
    return f"raised {type(o.error).__name__}" if o.error is not None else str(show(o.values))


def fmt(aval) -> str:
    shape, dtype = aval
    return f"{dtype}[{','.join(map(str, shape))}]"


def program(case: ir.Case) -> str:
    """The program, for a failure's details."""
    return f"program:\n{emit.kernel_source(case)}"


def side_by_side(case, rows, left, right) -> str:
    """The program, then one row per observable: left value, right value."""
    width = max([len(left)] + [len(str(a)) for _, a, _ in rows])
    lines = [program(case),
             f"{'':10} {left:<{width}}  {right}"]
    lines += [f"{name:10} {str(a):<{width}}  {b}" for name, a, b in rows]
    return "\n".join(lines)


def statement_kind(case: ir.Case, k: int | None) -> str:
    """Statement ``k`` by kind (``signal``), not by its view: views change as
    a case is minimized, the kind of statement does not."""
    return "untouched" if k is None else case.statements[k].tag


def relation(want: int, got: int, effect: int = 0) -> str:
    """How a wrong count ``got`` relates to the right one, ``want``, given the
    ``effect`` of the statement that wrote it last.

    >>> relation(5, 3, effect=2), relation(4, -4)
    ('update lost', 'negated')
    """
    if effect and got == want - effect:
        return "update lost"
    if effect and got == want + effect:
        return "update applied twice"
    if want and got == -want:
        return "negated"
    return "too high" if got > want else "too low"


def read_name(case: ir.Case, k: int) -> str:
    """Read ``k`` in words: over a grid (or a mesh), each point (device) reads in turn."""
    if case.grid is None and case.devices is None:
        return f"read {k}"
    where = "grid point" if case.grid is not None else "device"
    return f"read {k % case.num_reads} at {where} {k // case.num_reads}"


def nonzero(case, states: dict) -> list[int]:
    """The non-zero counts among ``states`` (ref number -> contents)."""
    data = model.data_refs(case)
    return [c for i, s in states.items() if i not in data
            for c in np.asarray(s, dtype=object).reshape(-1) if c != 0]


def leftover_fits(leftover: int, counts: list[int]) -> bool:
    """The TPU interpreter reports one non-zero count at exit, or none."""
    return leftover in counts if counts else leftover == 0


def model_judges(report: CaseReport, outcome: paths.Outcome) -> bool:
    """Whether the model's meaning judges ``outcome``: one it defines, or, on
    a path that runs a mesh in lockstep (``LOCKSTEP``), the lockstep meaning
    (`fuzz.model.Meaning.lockstep`)."""
    meaning = report.meaning
    return meaning.undefined is None or (meaning.lockstep and paths.fact(outcome.path, "LOCKSTEP"))


def traced(report: CaseReport) -> paths.Outcome | None:
    """The error-free run of a path that traced the kernel (its ``jaxpr``)."""
    return next((o for o in report.outcomes if o.error is None and o.jaxpr is not None), None)


def not_partly_dischargeable(report: CaseReport) -> str | None:
    """Why the kernel a path traced cannot be discharged in part and then
    evaluated, for oracles that do (None: it can)."""
    case, run = report.case, traced(report)
    if run is None:
        return "no path traced the kernel"
    if case.devices is not None:
        return "a mesh program's discharged form runs only under its shard_map"
    if any(r.scoped for r in case.refs):
        # Partly discharged, a run_scoped stays, and it has no evaluation rule.
        return "the kernel allocates with pl.run_scoped"
    if why := refused(case, "partial-discharge", run.path):
        return why
    if any(f.path == run.path and f.oracle in ("aval-preserved", "abstract-concrete")
           for f in report.failures):
        # (a known finding's, or the tiers would have stopped)
        return ("its full discharge already gives a ref of the wrong aval, which a partial "
                "one cannot agree with (evaluating it, JAX 0.9.1 to 0.10.2 abort the process)")
    return None


def refused(case: ir.Case, transform: str, path: str) -> str | None:
    """Why JAX refuses ``transform`` of ``path``'s program, as a statement says."""
    module = paths.MODULES[path]
    return next((why for s in case.statements if (why := s.refused_under(transform, module))),
                None)


# --- one run against another (path-vs-path, interpret-options) -----------------

def comparable(report) -> str | None:
    """Why the runs of a valid case need not agree (None: they must): a racy
    one, one that ends with a copy in flight, or one whose counts leave the
    range each path keeps, may differ from path to path."""
    if report.meaning.verdict in ("racy", "unwaited", "overflow"):
        return f"a program the model calls {report.meaning.verdict} may differ from path to path"
    return None


def groups(report) -> list[list]:
    """The error-free runs of each implementation, in path order: a path's
    run first, then its runs under other options (``VARIANT_OF``)."""
    by = {}
    for o in report.fine:
        by.setdefault(paths.variant_of(o.path), []).append(o)
    return list(by.values())


def reads_differ(cls, case: ir.Case, a, b) -> list[OracleFailure]:
    """The first read where runs ``a`` and ``b`` disagree, as a failure of ``cls``."""
    if list(a.reads) == list(b.reads):
        return []
    k = next(k for k, (x, y) in enumerate(zip(a.reads, b.reads)) if x != y)
    read = [n for n, s in enumerate(case.statements) if s.writes_out][k % case.num_reads]
    return [cls.fail(
        case, "semaphore_read", f"{a.path}/{b.path}",
        f"{read_name(case, k)} is {a.reads[k]} on {a.path}, {b.reads[k]} on {b.path}",
        side_by_side(case, [("reads", list(a.reads), list(b.reads))], a.path, b.path),
        shape=f"read|{statement_kind(case, read)}|{relation(a.reads[k], b.reads[k])} "
              "on the second path",
        statement=read)]


def data_differ(cls, case: ir.Case, a, b) -> list[OracleFailure]:
    """The first data ref whose final contents differ between ``a`` and ``b``."""
    for i in sorted(set(a.state) & set(b.state) & model.data_refs(case)):
        x, y = np.asarray(a.state[i], dtype=object), np.asarray(b.state[i], dtype=object)
        if x.shape != y.shape or nan_same(x) != nan_same(y):
            return [cls.fail(case, "?", f"{a.path}/{b.path}",
                             f"final r{i} differs between {a.path} and {b.path}",
                             side_by_side(case, [(f"r{i}", x.tolist(), y.tolist())],
                                          a.path, b.path),
                             shape=f"final value|r{i} differs")]
    return []


def leftover_differs(cls, case: ir.Case, a, b) -> list[OracleFailure]:
    """``b``'s count left over at exit, where ``a`` shows every count and
    ends with other non-zero ones."""
    counted = {i for i in range(len(case.refs)) if i not in model.data_refs(case)}
    if a.state is None or not counted <= set(a.state) or b.leftover is None:
        return []
    counts = nonzero(case, a.state)
    if leftover_fits(b.leftover, counts):
        return []
    return [cls.fail(case, "?", f"{a.path}/{b.path}",
                     f"{b.path} leaves {b.leftover} at kernel exit; {a.path} "
                     f"ends with non-zero counts {counts}",
                     side_by_side(case, [("left over", counts or 0, b.leftover)], a.path, b.path),
                     shape=f"count left at exit|{'non-zero' if counts else 'zero'} on {a.path}")]


def chained(cls, case: ir.Case, runs) -> list[OracleFailure]:
    """Each of ``runs`` against the next that shows the same: reads, then
    data (the first difference only)."""
    with_reads = [o for o in runs if o.reads is not None]
    found = [f for a, b in zip(with_reads, with_reads[1:]) for f in reads_differ(cls, case, a, b)]
    with_state = [o for o in runs if o.state is not None]
    return found + next((d for a, b in zip(with_state, with_state[1:])
                         if (d := data_differ(cls, case, a, b))), [])

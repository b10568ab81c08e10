"""Differential comparisons: each path against the reference model, and the
paths against each other.

Only what a path lets us observe is compared: the reads (every evaluating
path but the TPU interpreter, which cannot read semaphores on CPU), the final
counts (``run_state`` returns them), and the count the TPU interpreter reports
left over at kernel exit. Each comparison yields `Mismatch` records; the
oracles module turns them into failures.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from fuzz import emit, ir, model

# Interpret-mode semaphores are int16; counts beyond it wrap. The message says
# so when that alone explains a difference, so the two are told apart.
WRAPS = "16-bit wraparound of the expected count"


@dataclass(frozen=True)
class Mismatch:
    oracle: str      # "model-vs-path" | "path-vs-path"
    primitive: str   # the statement kind to blame (see `model.Meaning`)
    path: str
    message: str     # one line; what differs, not the program
    details: str     # the program and both sides, for a reader
    # The shape of the failure, which the finding's signature keeps instead
    # of the message: what is observed, through which kind of statement, and
    # how the value relates to the right one (`relation`).
    shape: str = "-"
    statement: int | None = None   # the statement to blame, if one is
    # Where the wrong value is seen: a read's statement, or len(body) for a
    # final content (later than ``statement``, its last writer).
    seen_at: int | None = None
    # The exception one side raised where the other ran: the finding is then
    # an exception, not a wrong value (its symptom).
    raised: str | None = None


def _wrapped(count: int) -> int:
    return (count + 2**15) % 2**16 - 2**15


def _why(want, got) -> str:
    return f" ({WRAPS})" if _wrapped(want) == got else ""


def _blame(case, writer) -> str:
    return "?" if writer is None else ir.primitive(case.statements[writer])


def statement_kind(case: ir.Case, k: int | None) -> str:
    """Statement ``k`` by kind (``signal``), not by its view: views change as
    a case is minimized, the kind of statement does not."""
    return "untouched" if k is None else case.statements[k].tag


def relation(want: int, got: int, effect: int = 0) -> str:
    """How a wrong count ``got`` relates to the right one, ``want``, given the
    ``effect`` of the statement that wrote it last.

    >>> relation(5, 3, effect=2), relation(32768, -32768), relation(4, -4)
    ('update lost', 'wrapped', 'negated')
    """
    if got != want and _wrapped(want) == got:
        return "wrapped"
    if effect and got == want - effect:
        return "update lost"
    if effect and got == want + effect:
        return "update applied twice"
    if want and got == -want:
        return "negated"
    return "too high" if got > want else "too low"


def _shape(case, observed: str, writer, want, got) -> str:
    effect = model.effect(case.statements[writer]) if writer is not None else 0
    return f"{observed}|{statement_kind(case, writer)}|{relation(want, got, effect)}"


def side_by_side(case, rows, left, right) -> str:
    """The program, then one row per observable: left value, right value."""
    width = max([len(left)] + [len(str(a)) for _, a, _ in rows])
    lines = [f"program:\n{emit.kernel_source(case)}",
             f"{'':10} {left:<{width}}  {right}"]
    lines += [f"{name:10} {str(a):<{width}}  {b}" for name, a, b in rows]
    return "\n".join(lines)


def _nonzero(case, states: dict) -> list[int]:
    """The non-zero counts among ``states`` (ref number -> contents)."""
    data = model.data_refs(case)
    return [c for i, s in states.items() if i not in data
            for c in np.asarray(s, dtype=object).reshape(-1) if c != 0]


def _leftover_fits(leftover: int, nonzero: list[int]) -> bool:
    """The TPU interpreter reports one non-zero count at exit, or none."""
    return leftover in nonzero if nonzero else leftover == 0


def _read(case: ir.Case, k: int) -> str:
    """Read ``k`` in words: over a grid (or a mesh), each point (device) reads in turn."""
    if case.grid is None and case.devices is None:
        return f"read {k}"
    where = "grid point" if case.grid is not None else "device"
    return f"read {k % case.num_reads} at {where} {k // case.num_reads}"


def against_model(case: ir.Case, meaning: model.Meaning, outcome) -> list[Mismatch]:
    """Where ``outcome`` (an error-free run of a valid case with a defined
    meaning) differs from what the case means."""
    # diffs: (statement to blame, message, shape, where it is seen), in order
    rows, diffs, end, unwaited = [], [], len(case.statements), []
    if outcome.reads is not None:
        rows.append(("reads", list(meaning.reads), list(outcome.reads)))
        reads = [n for n, s in enumerate(case.statements) if s.writes_out]
        for k, (want, got) in enumerate(zip(meaning.reads, outcome.reads)):
            if want != got:
                writer = meaning.read_writers[k]
                diffs.append((writer, f"{_read(case, k)} is {got}, expected {want}{_why(want, got)}",
                              _shape(case, "read", writer, want, got), reads[k % len(reads)]))
    if outcome.state is not None:
        for i, got in outcome.state.items():
            counts = i not in model.data_refs(case)
            want, got = np.asarray(meaning.state[i], dtype=object), np.asarray(got, dtype=object)
            writers = np.asarray(meaning.state_writers[i], dtype=object)
            rows.append((f"r{i}", meaning.state[i], got.tolist()))
            if want.shape != got.shape:
                diffs.append((None, f"final r{i} has shape {got.shape}, expected {want.shape}",
                              "final value|shape differs", end))
                continue
            for at in map(tuple, np.argwhere(want != got)):
                if (i, int(np.ravel_multi_index(at, want.shape)) if at else 0) in meaning.unknown:
                    continue
                where = f"final r{i}{[int(j) for j in at]}"
                if counts:
                    diffs.append((writers[at], f"{where} is {got[at]}, expected "
                                  f"{want[at]}{_why(want[at], got[at])}",
                                  _shape(case, "final count", writers[at], int(want[at]),
                                         int(got[at])), end))
                else:
                    diffs.append((writers[at], f"{where} is {got[at]}, expected {want[at]}",
                                  f"final value|{statement_kind(case, writers[at])}|differs",
                                  end))
    if outcome.leftover is not None:
        nonzero = _nonzero(case, dict(enumerate(meaning.state)))
        rows.append(("left over", nonzero or 0, outcome.leftover))
        if meaning.verdict == "unwaited" and outcome.leftover == 0:
            unwaited.append(Mismatch(
                "left-over-counts", "dma_start", outcome.path,
                "a copy never waited on leaves no count at kernel exit",
                side_by_side(case, rows, "expected (model)", f"actual ({outcome.path})"),
                shape="count left at exit|zero"))
        elif meaning.verdict != "unwaited" and not _leftover_fits(outcome.leftover, nonzero):
            diffs.append((None, f"count left at kernel exit is {outcome.leftover}, expected "
                                f"{'one of those left non-zero' if nonzero else 0}",
                          f"count left at exit|{'non-zero' if nonzero else 'zero'} expected",
                          end))
    # An element the program never touched shows where a value went, not which
    # statement sent it there: prefer a difference with a statement to blame.
    # One difference per statement to blame, so that a known bug in one
    # statement hides no other statement's.
    blamed = [d for d in diffs if d[0] is not None]
    first = {}
    for d in blamed or diffs[:1]:
        first.setdefault(d[0], d)
    details = side_by_side(case, rows, "expected (model)", f"actual ({outcome.path})")
    return unwaited + [Mismatch("model-vs-path", _blame(case, writer), outcome.path, message,
                                details, shape=shape, statement=writer, seen_at=seen_at)
                       for writer, message, shape, seen_at in first.values()]


def between(a, b) -> str:
    """The oracle a difference between outcomes ``a`` and ``b`` fails: one
    implementation under two sets of options (`fuzz.paths.variant_of`)
    differs from itself, or two paths differ."""
    from fuzz.paths import variant_of
    return "interpret-options" if variant_of(a.path) == variant_of(b.path) else "path-vs-path"


def between_paths(case: ir.Case, outcomes) -> list[Mismatch]:
    """Where two error-free runs of the same case disagree on what both show."""
    found = []
    ran = [o for o in outcomes if o.error is None and o.reads is not None]
    for a, b in zip(ran, ran[1:]):
        if list(a.reads) != list(b.reads):
            k = next(k for k, (x, y) in enumerate(zip(a.reads, b.reads)) if x != y)
            read = [n for n, s in enumerate(case.statements) if s.writes_out][k % case.num_reads]
            found.append(Mismatch(
                between(a, b), "semaphore_read", f"{a.path}/{b.path}",
                f"{_read(case, k)} is {a.reads[k]} on {a.path}, {b.reads[k]} on {b.path}",
                side_by_side(case, [("reads", list(a.reads), list(b.reads))], a.path, b.path),
                shape=f"read|{statement_kind(case, read)}|"
                      f"{relation(a.reads[k], b.reads[k])} on the second path",
                statement=read))
    found += _data_between(case, outcomes)
    counted = {i for i in range(len(case.refs)) if i not in model.data_refs(case)}
    with_state = [o for o in outcomes if o.error is None and o.state is not None
                  and counted <= set(o.state)]   # it shows every count
    for a in with_state:
        for b in outcomes:
            if b.error is None and b.leftover is not None:
                nonzero = _nonzero(case, a.state)
                if not _leftover_fits(b.leftover, nonzero):
                    found.append(Mismatch(
                        between(a, b), "?", f"{a.path}/{b.path}",
                        f"{b.path} leaves {b.leftover} at kernel exit; {a.path} "
                        f"ends with non-zero counts {nonzero}",
                        side_by_side(case, [("left over", nonzero or 0, b.leftover)],
                               a.path, b.path),
                        shape=f"count left at exit|{'non-zero' if nonzero else 'zero'} "
                              f"on {a.path}"))
    return found


def _data_between(case: ir.Case, outcomes) -> list[Mismatch]:
    """Where two error-free runs end with other contents of a data ref."""
    ran = [o for o in outcomes if o.error is None and o.state is not None]
    for a, b in zip(ran, ran[1:]):
        for i in sorted(set(a.state) & set(b.state) & model.data_refs(case)):
            x, y = np.asarray(a.state[i], dtype=object), np.asarray(b.state[i], dtype=object)
            if x.shape == y.shape and np.array_equal(x, y):
                continue
            return [Mismatch(between(a, b), "?", f"{a.path}/{b.path}",
                             f"final r{i} differs between {a.path} and {b.path}",
                             side_by_side(case, [(f"r{i}", x.tolist(), y.tolist())],
                                          a.path, b.path),
                             shape=f"final value|r{i} differs")]
    return []


# How the model says a kernel store races with a copy in flight
# (fuzz/ops/dma/common.py), or a remote copy with the stores of its
# receiver's kernel start (fuzz/model.py, Memory.unordered). A read racing
# with one is racy too, but JAX may drop a load whose value goes unused, so
# only stores are sure to be seen.
_KERNEL_RACE = re.compile(r"writes the (destination|source)|\(only the kernel's start\)")


def promises(meaning: model.Meaning, path: str) -> bool:
    """Whether JAX promises something of a program with no meaning on
    ``path``, a TPU interpreter's: a race between a kernel store and a copy
    (a copy in flight, or one landing from another device) is one its race
    detector (``tpu_interpret_eager``) must see."""
    return (meaning.verdict == "racy" and path == "tpu_interpret_eager"
            and _KERNEL_RACE.search(meaning.undefined) is not None)


def promised(case: ir.Case, meaning: model.Meaning, outcomes) -> list[Mismatch]:
    """Where an error-free TPU interpreter run breaks what JAX promises of
    the program (`promises`), or its race detector sees a race in a program
    the model finds race-free."""
    found = []
    for o in outcomes:
        if o.races is None:
            continue
        race_free = meaning.verdict == "defined"   # an unwaited copy races with the kernel's end
        if o.races and race_free:
            found.append(Mismatch("race-detection", "?", o.path,
                                  "the race detector reports a race in a race-free program",
                                  f"program:\n{emit.kernel_source(case)}",
                                  shape="race|reported in a race-free program"))
        if not o.races and promises(meaning, o.path) and meaning.verdict == "racy":
            found.append(Mismatch("race-detection", "dma_start", o.path,
                                  "the race detector misses a race with a copy",
                                  f"program:\n{emit.kernel_source(case)}\nmodel: {meaning.undefined}",
                                  shape="race|missed"))
    return found

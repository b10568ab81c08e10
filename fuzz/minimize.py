"""IR-level reduction of a failing case, after Hypothesis' own shrink.

Greedy: try simpler variants of the case, in order of how much each one
removes, keep the first that still fails (the caller's predicate: the same
signature), and start over from it, until nothing simpler fails or the
attempt budget is spent. A variant that is not well-formed IR is skipped, and
so is one that changes what is *wrong* with the program (see `mistakes`):
otherwise an invalid case could shrink into a valid one that happens to fail
the same way, and its reproducer would accuse JAX of the wrong thing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from fuzz import ir

# Cheapest path first: the minimized case keeps the cheapest one that fails.
PATH_COST = {"abstract": 1, "run_state": 2, "pallas_call": 3, "tpu_interpret": 4}
_SIGNAL_WAIT_KINDS = ("regular", "barrier", "int16")
_READ_KINDS = _SIGNAL_WAIT_KINDS + ("dma",)


@dataclass(frozen=True)
class Minimized:
    case: ir.Case
    attempts: int
    seconds: float


def minimize(case: ir.Case, still_fails, *, max_attempts: int = 300,
             max_seconds: float = 120.0) -> Minimized:
    """The smallest variant of ``case`` found for which ``still_fails(variant)``."""
    start = time.perf_counter()
    target, tried, attempts = mistakes(case), {case}, 0
    current, improved = case, True
    while improved and attempts < max_attempts and time.perf_counter() - start < max_seconds:
        improved = False
        for candidate in variants(current):
            if candidate in tried or not cost(candidate) < cost(current):
                continue
            tried.add(candidate)
            if mistakes(candidate) != target:
                continue
            attempts += 1
            if still_fails(candidate):
                current, improved = candidate, True
                break
            if attempts >= max_attempts or time.perf_counter() - start >= max_seconds:
                break
    return Minimized(current, attempts, time.perf_counter() - start)


def cost(case: ir.Case) -> tuple:
    """What "simpler" means, most important first (lexicographic, so the
    search terminates)."""
    ints = list(ir.walk_ints(case))
    extras = sum((s.device_id is not None) + (s.device_id_type is not None)
                 + (s.core_index is not None) for s in case.body if isinstance(s, ir.Signal))
    return (len(case.body),
            sum(len(s.view.transforms) for s in case.body),
            len(case.semaphores),
            sum(PATH_COST.get(p, 10) for p in case.paths),
            sum(len(s.shape) for s in case.semaphores),
            sum(d for sem in case.semaphores for d in sem.shape),
            sum(i.dynamic for i in ints),
            sum(s.scoped for s in case.semaphores),
            extras,
            sum(s.kind != "int16" for s in case.semaphores),
            sum(abs(v) for i in ints for v in (i.values if isinstance(i, ir.IntArray) else (i.value,))),
            sum(isinstance(s, ir.Wait) and not s.decrement for s in case.body))


# --- what is wrong with a program (as the strategies build mistakes) -----------

def mistakes(case: ir.Case) -> frozenset[str]:
    """The kinds of mistake the case's statements make: empty for a valid
    program. Mirrors the mistakes `strategies.invalid_programs` plants."""
    found = set()
    for stmt in case.body:
        found |= _statement_mistakes(case.semaphores, stmt)
    return frozenset(found)


def _statement_mistakes(sems, stmt) -> set[str]:
    found = set()
    kinds = _READ_KINDS if isinstance(stmt, ir.Read) else _SIGNAL_WAIT_KINDS
    if sems[stmt.view.ref].kind not in kinds:
        found.add("dtype")
    try:
        if ir.view_shape(sems, stmt.view) != ():
            found.add("non-scalar view")
    except ir.IRError:
        found.add("out of bounds")
    for t in stmt.view.transforms:
        if isinstance(t, ir.Bitcast):
            found.add("bitcast")
        if isinstance(t, ir.At) and any(isinstance(i, ir.Slice) and i.step is not None
                                        and i.step < 1 for i in t.indices):
            found.add("step")
    if isinstance(stmt, ir.Signal):
        operand = stmt.inc
        if stmt.device_id is not None or stmt.device_id_type is not None:
            found.add("remote")
        if stmt.core_index is not None:
            found.add("core index")
    else:
        operand = getattr(stmt, "value", ir.Int(0))
    if not -2**31 <= operand.value < 2**31:
        found.add("overflow")
    return found


# --- simpler variants ---------------------------------------------------------

def variants(case: ir.Case):
    """Simpler neighbours of ``case``; ill-formed ones are dropped here."""
    for make in (_fewer_paths, _fewer_statements, _fewer_semaphores, _shorter_chains,
                 _simpler_statements, _simpler_semaphores):
        for fields in make(case):
            try:
                yield replace(case, **fields)
            except (ir.IRError, ValueError, TypeError, IndexError):
                continue


def _fewer_paths(case):
    for p in sorted(case.paths, key=lambda p: PATH_COST.get(p, 10)):
        if case.paths != (p,):
            yield {"paths": (p,)}


def _fewer_statements(case):
    body, n = case.body, len(case.body)
    if n >= 4:
        yield {"body": body[n // 2:]}
        yield {"body": body[:n // 2]}
    for i in range(n):
        yield {"body": body[:i] + body[i + 1:]}


def _fewer_semaphores(case):
    used = {s.view.ref for s in case.body}
    for i in range(len(case.semaphores)):
        if i in used:
            continue
        renumber = {old: old - (old > i) for old in used}
        yield {"semaphores": case.semaphores[:i] + case.semaphores[i + 1:],
               "body": tuple(replace(s, view=replace(s.view, ref=renumber[s.view.ref]))
                             for s in case.body)}


def _with_statement(case, i, stmt):
    return {"body": case.body[:i] + (stmt,) + case.body[i + 1:]}


def _shorter_chains(case):
    for i, stmt in enumerate(case.body):
        chain = stmt.view.transforms
        for j in range(len(chain)):
            view = replace(stmt.view, transforms=chain[:j] + chain[j + 1:])
            yield _with_statement(case, i, replace(stmt, view=view))


def _simpler_statements(case):
    for i, stmt in enumerate(case.body):
        for simpler in _simpler_statement(stmt):
            yield _with_statement(case, i, simpler)


def _simpler_statement(stmt):
    if isinstance(stmt, ir.Signal):
        for name in ("device_id", "device_id_type", "core_index"):
            if getattr(stmt, name) is not None:
                yield replace(stmt, **{name: None})
        for inc in _simpler_ints(stmt.inc):
            yield replace(stmt, inc=inc)
    if isinstance(stmt, ir.Wait):
        if not stmt.decrement:
            yield replace(stmt, decrement=True)
        for value in _simpler_ints(stmt.value):
            yield replace(stmt, value=value)
    chain = stmt.view.transforms
    for j, t in enumerate(chain):
        if not isinstance(t, ir.At):
            continue
        for k, idx in enumerate(t.indices):
            for simpler in _simpler_index(idx):
                at = ir.At(t.indices[:k] + (simpler,) + t.indices[k + 1:])
                yield replace(stmt, view=replace(stmt.view, transforms=chain[:j] + (at,) + chain[j + 1:]))


def _simpler_ints(i: ir.Int):
    if i.dynamic:
        yield ir.Int(i.value)
    for v in dict.fromkeys((0, 1, i.value // 2 if i.value > 0 else -(-i.value // 2))):
        if abs(v) < abs(i.value):
            yield ir.Int(v, i.dynamic)


def _simpler_index(idx):
    match idx:
        case ir.Int():
            yield from _simpler_ints(idx)
        case ir.Ds():
            for start in _simpler_ints(idx.start):
                yield ir.Ds(start, idx.size)
            yield ir.Int(idx.start.value, idx.start.dynamic)
        case ir.IntArray():
            if idx.dynamic:
                yield ir.IntArray(idx.values)
            if len(idx.values) > 1:
                yield ir.IntArray(idx.values[:1], idx.dynamic)
        case ir.Slice() if idx != ir.Slice():
            yield ir.Slice()


def _simpler_semaphores(case):
    for i, sem in enumerate(case.semaphores):
        for simpler in _simpler_semaphore(sem):
            yield {"semaphores": case.semaphores[:i] + (simpler,) + case.semaphores[i + 1:]}


def _simpler_semaphore(sem: ir.Semaphore):
    if sem.scoped:
        yield replace(sem, scoped=False)
    if sem.kind != "int16":
        yield replace(sem, kind="int16")
    shape = sem.shape
    for d in range(len(shape)):
        yield replace(sem, shape=shape[:d] + shape[d + 1:])
        for smaller in dict.fromkeys((1, shape[d] - 1)):
            if 0 < smaller < shape[d]:
                yield replace(sem, shape=shape[:d] + (smaller,) + shape[d + 1:])

"""IR-level reduction of a failing case, after Hypothesis' own shrink.

Greedy: try simpler variants of the case, in order of how much each one
removes, keep the first that still fails (the caller's predicate: the same
signature), and start over from it, until nothing simpler fails or the
attempt budget is spent. A variant that is not well-formed IR is skipped, and
so is one that changes what is *wrong* with the program (see `mistakes`):
otherwise an invalid case could shrink into a valid one that happens to fail
the same way, and its reproducer would accuse JAX of the wrong thing. For
the same reason a valid program keeps the model's verdict (`verdict`): a
defined one may not shrink into one that ends with a copy in flight, or races.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace

from fuzz import elements, ir, model, paths

# Cheapest path first: the minimized case keeps the cheapest one that fails.
PATH_COST = paths.COST


@dataclass(frozen=True)
class Minimized:
    case: ir.Case
    attempts: int
    seconds: float


def minimize(case: ir.Case, still_fails, *, max_attempts: int = 300,
             max_seconds: float = 120.0) -> Minimized:
    """The smallest variant of ``case`` found for which ``still_fails(variant)``."""
    start = time.perf_counter()
    target, tried, attempts = (mistakes(case), verdict(case)), {case}, 0
    current, improved = case, True
    while improved and attempts < max_attempts and time.perf_counter() - start < max_seconds:
        improved = False
        for candidate in variants(current):
            if candidate in tried or not cost(candidate) < cost(current):
                continue
            tried.add(candidate)
            if (mistakes(candidate), verdict(candidate)) != target:
                continue
            attempts += 1
            if _fails(still_fails, candidate):
                current, improved = candidate, True
                break
            if attempts >= max_attempts or time.perf_counter() - start >= max_seconds:
                break
    return Minimized(current, attempts, time.perf_counter() - start)


def _fails(still_fails, candidate: ir.Case) -> bool:
    """``still_fails(candidate)``; False for a candidate the model cannot
    evaluate (a simplification drew what no strategy draws: a ref made
    int16 under a bitcast to a wider type)."""
    try:
        return still_fails(candidate)
    except elements.ModelError:
        return False


def cost(case: ir.Case) -> tuple:
    """What "simpler" means, most important first (lexicographic, so the
    search terminates)."""
    ints = list(ir.walk_ints(case))
    statements = case.statements
    return (len(statements),
            sum(len(v.transforms) for v in ir.walk(case.body, ir.View)),
            len(case.refs),
            case.grid.size if case.grid else 0,
            case.devices or 0,
            sum(PATH_COST.get(p, 10) for p in case.paths),
            sum(len(r.shape) for r in case.refs),
            sum(d for r in case.refs for d in r.shape),
            sum(i.dynamic for i in ints),
            sum(r.scoped + r.aliased + (r.memory_space is not None) for r in case.refs),
            sum(s.complexity() for s in statements),
            _grid_complexity(case.grid),
            sum(r.kind != "int16" for r in case.refs) + case.x64,
            sum(abs(v) for i in ints for v in (i.values if isinstance(i, ir.IntArray) else (i.value,))))


# --- what is wrong with a program (as the strategies build mistakes) -----------

def mistakes(case: ir.Case) -> frozenset[str]:
    """The mistakes (by `fuzz.ops.Mistake` name) the case's statements make:
    empty for a valid program. Each op says which it makes."""
    return frozenset(m for stmt in case.statements for m in stmt.mistakes(case))


def verdict(case: ir.Case) -> str | None:
    """The model's verdict on a valid case (`fuzz.model.Meaning.verdict`:
    defined, racy, unwaited, ...); None for an invalid one; "unevaluable"
    for a variant the model cannot run (a copy between refs that a
    simplification gave different dtypes), which no drawn case is."""
    if not case.valid:
        return None
    try:
        return model.evaluate(case).verdict
    except (elements.ModelError, ValueError, TypeError, IndexError):
        return "unevaluable"


# --- simpler variants ---------------------------------------------------------

def variants(case: ir.Case):
    """Simpler neighbours of ``case``; ill-formed ones are dropped here."""
    for make in (_fewer_paths, _fewer_statements, _fewer_refs, _shorter_chains,
                 _simpler_statements, _simpler_refs, _simpler_grid, _simpler_mesh):
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
        yield {"body": body[:n // 2]}
        second = body
        for _ in range(n // 2):
            second = second and ir.without_statement(second, 0)
        if second:
            yield {"body": second}
    statements = case.statements
    # A control statement unwrapped: its body run once, one branch taken.
    for i, stmt in enumerate(statements):
        for b in range(len(stmt.blocks())):
            if (flatter := ir.unwrapped(body, i, b)) is not None:
                yield {"body": flatter}
    for i in range(len(statements)):
        if (fewer := ir.without_statement(body, i)) is not None:
            yield {"body": fewer}


def _fewer_refs(case):
    used = {v.ref for v in ir.walk(case.body, ir.View)}
    for i in range(len(case.refs)):
        if i in used:
            continue
        renumber = {old: old - (old > i) for old in used}
        yield {"refs": case.refs[:i] + case.refs[i + 1:],
               "body": ir.replace_nodes(case.body, ir.View,
                                        lambda v: replace(v, ref=renumber[v.ref]))}


def _with_statement(case, n, stmt):
    return {"body": ir.replaced_statement(case.body, n, stmt)}


def _shorter_chains(case):
    for n, stmt in enumerate(case.statements):
        chain = stmt.view.transforms if hasattr(stmt, "view") else ()
        for j in range(len(chain)):
            view = replace(stmt.view, transforms=chain[:j] + chain[j + 1:])
            yield _with_statement(case, n, replace(stmt, view=view))


def _simpler_statements(case):
    for n, stmt in enumerate(case.statements):
        for simpler in _simpler_statement(case, stmt):
            yield _with_statement(case, n, simpler)


def _simpler_statement(case, stmt):
    yield from stmt.simpler(case)
    chain = stmt.view.transforms if hasattr(stmt, "view") else ()
    for j, t in enumerate(chain):
        if not isinstance(t, ir.At):
            continue
        for k, idx in enumerate(t.indices):
            for simpler in _simpler_index(idx):
                at = ir.At(t.indices[:k] + (simpler,) + t.indices[k + 1:])
                yield replace(stmt, view=replace(stmt.view, transforms=chain[:j] + (at,) + chain[j + 1:]))


def _simpler_index(idx):
    match idx:
        case ir.Int():
            yield from ir.simpler_ints(idx)
        case ir.Ds():
            for start in ir.simpler_ints(idx.start):
                yield ir.Ds(start, idx.size)
            yield ir.Int(idx.start.value, idx.start.dynamic)
        case ir.IntArray():
            if idx.dynamic:
                yield ir.IntArray(idx.values)
            if len(idx.values) > 1:
                yield ir.IntArray(idx.values[:1], idx.dynamic)
        case ir.Slice() if idx != ir.Slice():
            yield ir.Slice()


def _simpler_refs(case):
    if case.x64:
        yield {"x64": False}   # dropped where no ref needs it (else ill-formed)
    for i, ref in enumerate(case.refs):
        for simpler in _simpler_ref(ref):
            yield {"refs": case.refs[:i] + (simpler,) + case.refs[i + 1:]}
        for d in range(len(ref.shape)):
            yield _without_axis(case, i, d)


def _without_axis(case, i, d):
    """Ref ``i`` without axis ``d``, and each view of it that indexes first
    without its index there: (1, 1, 1) and r.at[0, 0, 0] become (1, 1) and
    r.at[0, 0], which dropping the axis alone cannot reach."""
    def dropped(view):
        first = view.transforms[:1]
        if view.ref != i or not (first and isinstance(first[0], ir.At)
                                 and len(first[0].indices) > d):
            return view
        indices = first[0].indices
        at = (ir.At(indices[:d] + indices[d + 1:]),) if len(indices) > 1 else ()
        return replace(view, transforms=at + view.transforms[1:])
    shape = case.refs[i].shape
    return {"refs": case.refs[:i] + (replace(case.refs[i], shape=shape[:d] + shape[d + 1:]),)
            + case.refs[i + 1:], "body": ir.replace_nodes(case.body, ir.View, dropped)}


def _grid_complexity(grid: ir.Grid | None) -> int:
    if grid is None:
        return 0
    return len(grid.shape) + grid.reverse + grid.prefetch + (grid.order != tuple(sorted(grid.order)))


def _simpler_grid(case):
    """No grid, fewer or smaller axes, blocks in order, the index maps
    computing them."""
    grid = case.grid
    if grid is None:
        return
    yield {"grid": None}
    shape, order = grid.shape, grid.order
    for a in range(len(shape)):
        if len(shape) > 1:   # without axis a; the others keep their order
            kept = [o - (o > a) for o in order if o != a]
            yield {"grid": replace(grid, shape=shape[:a] + shape[a + 1:], order=tuple(kept))}
        for smaller in dict.fromkeys((1, 2, shape[a] - 1)):   # 2: the fewest points that differ
            if smaller < shape[a]:
                yield {"grid": replace(grid, shape=shape[:a] + (smaller,) + shape[a + 1:])}
    for simpler in (replace(grid, order=tuple(sorted(order))), replace(grid, reverse=False),
                    replace(grid, prefetch=False)):
        if simpler != grid:
            yield {"grid": simpler}


def _simpler_mesh(case):
    """No mesh, then fewer devices (a pattern of copies needs none of its own)."""
    if case.devices is None:
        return
    yield {"devices": None}
    for fewer in dict.fromkeys((1, 2, case.devices // 2)):
        if fewer < case.devices:
            yield {"devices": fewer}


def _simpler_ref(ref: ir.Ref):
    if ref.scoped:
        yield replace(ref, scoped=False)
    if ref.aliased:
        yield replace(ref, aliased=False)
    if ref.memory_space is not None:
        yield replace(ref, memory_space=None)
    if ref.kind != "int16":
        yield replace(ref, kind="int16")
    shape = ref.shape
    for d in range(len(shape)):
        yield replace(ref, shape=shape[:d] + shape[d + 1:])
        for smaller in dict.fromkeys((1, shape[d] - 1)):
            if 0 < smaller < shape[d]:
                yield replace(ref, shape=shape[:d] + (smaller,) + shape[d + 1:])

"""Drawn programs with copies made race- and deadlock-free by
construction, as kernels are written: each copy is waited on before
anything else touches its destination or writes its source, and within
the block that starts it (a loop's next step, or the kernel's end, finds
no copy in flight); a wait with no copy of its block to complete is
dropped. The model still judges every program (`fuzz.ops.dma.common`):
this only makes the drawn ones mostly valid."""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.dma.common import DmaOp
from fuzz.ops.dma.start import DmaStart
from fuzz.ops.dma.wait import DmaWait

# How a drawn program with copies is sometimes broken, as a slip of the pen
# breaks a kernel: the model must call each result what it is (racy,
# deadlocking, a copy left in flight), never a value.
MUTATIONS = ("none", "drop_wait", "late_wait", "wait_twice", "wait_first")


def waited_before_use(body: tuple, refs) -> tuple:
    """``body`` with the waits its copies need put in, and orphan waits out."""
    for _ in range(4 * len(ir.flat(body)) + 4):
        fix = _first_fix(body, body, 0, refs)
        if fix is None:
            return body
        body = fix
    raise ir.IRError("the copies' waits did not settle")   # a bug here, not in the program


def completed(body: tuple, refs) -> st.SearchStrategy[tuple]:
    """A drawn program with copies, their waits put in before use, sometimes
    mutated (`mutants`): the family's ``COMPLETED`` hook for DmaStart."""
    return mutants(waited_before_use(body, refs))


@st.composite
def mutants(draw, body: tuple) -> tuple:
    """``body`` as drawn (three times in four), or with one of its
    top-level copy waits dropped (a copy left in flight, or a race with
    what follows), moved to the end (a race), doubled (a deadlock) or
    moved before its start (a deadlock). Shrinks towards ``body``.

    >>> mutants(()).example()
    ()
    """
    waits = top_waits(body)
    mutation = draw(st.sampled_from(MUTATIONS + ("none",) * 11)) if waits else "none"
    return body if mutation == "none" else mutated(body, mutation, draw(st.sampled_from(waits)))


def top_waits(body: tuple) -> list[int]:
    """The numbers of ``body``'s top-level copy waits."""
    return [n for n, s in ir.top_level(body) if isinstance(s, DmaWait)]


def mutated(body: tuple, mutation: str, n: int) -> tuple:
    """``body`` with ``mutation`` (one of `MUTATIONS`) made to its top-level
    wait number ``n``."""
    wait = ir.flat(body)[n]
    rest = ir.without_statement(body, n)
    if mutation == "drop_wait":
        return rest
    if mutation == "wait_twice":
        return ir.spliced(body, n, (wait,), after=True)
    if mutation == "late_wait":
        last = max(k for k, _ in ir.top_level(rest))
        return ir.spliced(rest, last, (wait,), after=True)
    if mutation != "wait_first":
        raise ValueError(f"mutation {mutation!r} not in {MUTATIONS}")
    start = max(k for k, s in ir.top_level(body) if k < n and isinstance(s, DmaStart)
                and s.operands() == wait.operands())
    return ir.spliced(rest, start, (wait,))


def _touches(stmt, copy) -> bool:
    """Whether ``stmt`` (or a statement it nests) uses ``copy``'s
    destination ref, or its source ref other than to read it."""
    for s in ir.flat((stmt,)):
        refs = {v.ref for v in ir.views(s) if v not in copy.semaphores()} | set(s.slices())
        if isinstance(s, DmaOp) and s.operands()[:3] == copy.operands()[:3]:
            refs -= {copy.src.ref}   # another wait or start of the same copy
        if copy.dst.ref in refs or copy.src.ref in refs and not getattr(s, "reads_only", False):
            return True
    return False


def _waits(copy, left: set[str]):
    method = ("wait" if copy.src_sem is None or left == {"dst", "src"} else
              "wait_write" if left == {"dst"} else "wait_read")
    return (DmaWait(copy.src, copy.dst, copy.sem, copy.src_sem, method, device_id=copy.device_id),)


def _first_fix(top, block, start, refs):
    """``top`` with the first fix that ``block`` (numbered from ``start``)
    needs made, or None if it needs none."""
    pending: list[tuple[DmaStart, set[str]]] = []
    n, last = start, None
    for stmt in block:
        if isinstance(stmt, DmaWait):
            match = next(((c, left) for c, left in pending
                          if c.operands() == stmt.operands()), None)
            if match is None:
                return ir.without_statement(top, n)
            match[1].difference_update({"wait": {"dst", "src"}, "wait_write": {"dst"},
                                        "wait_read": {"src"}}[stmt.method])
            pending = [(c, left) for c, left in pending if left]
        else:
            for copy, left in pending:
                if _touches(stmt, copy):
                    return ir.spliced(top, n, _waits(copy, left))
            first = n + 1
            for b in stmt.blocks():
                if (fix := _first_fix(top, b, first, refs)) is not None:
                    return fix
                first += len(ir.flat(b))
            if isinstance(stmt, DmaStart):
                pending.append((stmt, {"dst", "src"} if stmt.src_sem is not None else {"dst"}))
        last = n
        n += ir.size(stmt)
    if pending:
        copy, left = pending[0]
        return ir.spliced(top, last, _waits(copy, left), after=True)
    return None

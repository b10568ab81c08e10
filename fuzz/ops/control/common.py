"""What the control ops share: nested blocks written as inner functions,
run by the model, drawn by the caller's block strategy, and simplified."""
from __future__ import annotations

from hypothesis import strategies as st

import jax

from fuzz import compat, ir
from fuzz.ops.base import Op

# How a drawn count or branch index looks: small, static or from ``dyn``;
# negative counts run nothing, as ``range`` does.
COUNTS = st.integers(-1, 3)


class ControlOp(Op):
    family = "control"

    def not_applicable(self, path):
        # (custom_vmap_call has no rule up to 0.11.0, nor shard_map before 0.7,
        # nor the emit_pipeline primitive before 0.11.2)
        if not compat.has_discharge_rule(self.primitive):
            return f"JAX {jax.__version__} registers no discharge rule for {self.primitive}"
        return None

    def body_lines(self, e, block: tuple, first: int, header: str, footer: str = ""
                   ) -> list[tuple[str, int]]:
        """``header`` (a ``def`` line, statement ``e.n``'s), then ``block``'s
        lines one level in (numbered from ``first``), then ``footer``."""
        n = e.n
        lines = [(header, n)]
        inner = e.block(block, first)
        lines += [("    " + line, k) for line, k in inner]
        if footer or not inner:
            lines.append(("    " + (footer or "pass"), n))
        e.n = n
        return lines

    def firsts(self, n: int) -> list[int]:
        """The number of the first statement of each block (`ir.flat`)."""
        out, first = [], n + 1
        for b in self.blocks():
            out.append(first)
            first += len(ir.flat(b))
        return out

    def executed(self) -> list[int]:
        """The blocks (by index in `blocks`) a run of this statement
        executes, in order."""
        raise NotImplementedError

    def runs(self) -> list[tuple[int, tuple]]:
        """The blocks a run executes, in order, each by its index in
        `blocks` and as it runs then (`ir.bound` to its step's slices)."""
        return [(b, self.blocks()[b]) for b in self.executed()]

    def vary(self):
        return self.with_blocks(tuple(s.vary() for s in b) for b in self.blocks())

    def refused_under(self, transform, path):
        # A cond (lax.cond, lax.switch, pl.when): _cond_batching_rule says
        # "State effect not supported in vmap-of-cond". Inside a kernel,
        # pallas_call's own batching rule takes the cond.
        if self.primitive == "cond" and transform == "vmap" and path.CONTEXT != "pallas":
            return "vmap of a cond with ref effects is not implemented"
        return None


class SlicingOp(ControlOp):
    """A control statement with one block that runs once a step, seeing at
    step ``i`` the slice of each of its refs ``xs`` that `steps` says
    (`ir.Step`); subclasses have the fields ``xs`` and ``body``."""

    def slices(self):
        return self.xs

    def steps(self) -> list[int]:
        """Which slice of its ``xs`` each step takes, in order."""
        raise NotImplementedError

    def executed(self):
        return [0] * len(self.steps())

    def runs(self):
        return [(0, ir.bound(self.body, self.xs, i)) for i in self.steps()]

    def once(self, b):
        return ir.bound(self.body, self.xs, (self.steps() or [0])[0])

    def run(self, memory, n):
        for r in self.xs:
            # Each slice is written back, whether the block changed it or not.
            memory.writers[r][...] = n
        for _, block in self.runs():
            if (undefined := memory.run(block, n + 1)) is not None:
                return undefined
        return None

    def check_slices(self, case, n, length: int | None):
        """``xs`` are distinct data refs whose leading axis is ``length``
        (None: any, one or more)."""
        for r in self.xs:
            if not 0 <= r < len(case.refs) or case.refs[r].kind in ir.SEMAPHORE_TYPES or (
                    not case.refs[r].shape) or length is not None and (
                    case.refs[r].shape[0] != length) or self.xs.count(r) > 1:
                axis = "a leading axis" if length is None else (
                    f"the number of steps, {length}, as leading axis")
                raise ir.IRError(f"statement {n}: xs {self.xs}: distinct data refs with {axis}")


def sliceable(refs, usable=lambda ref: True) -> list[int]:
    """Refs a statement may slice: data refs (or int16 stand-ins for
    semaphores) with a leading axis."""
    return [i for i, r in enumerate(refs)
            if r.shape and r.kind not in ir.SEMAPHORE_TYPES and usable(r)]


@st.composite
def some_of(draw, refs, candidates):
    """One of ``candidates`` (ref numbers), and maybe another with the
    same leading axis."""
    first = draw(st.sampled_from(candidates))
    others = [i for i in candidates if i != first and refs[i].shape[0] == refs[first].shape[0]]
    more = st.lists(st.sampled_from(others), max_size=1) if others else st.just([])
    return (first, *draw(more))


def slicing_block(block, body, refs, xs) -> st.SearchStrategy[tuple]:
    """The block of a statement that slices ``xs``: drawn over the slices
    (`ir.sliced_refs`), seeing no value read from those refs before it, its
    views of them through the step (`ir.stepped`)."""
    outside = tuple(UNSEEN if {v.ref for v in ir.views(s)} & set(xs) else s for s in body)
    return blocks(block, outside, 1, refs=ir.sliced_refs(refs, xs)).map(
        lambda b: ir.stepped(b[0], xs))


def reslices(stmt) -> bool:
    """Whether a statement inside ``stmt`` slices again a ref that ``stmt``
    slices (drawn over the slices, a nested statement cannot tell), which a
    statement's ``xs`` (refs, not views) cannot say."""
    return bool({r for s in ir.flat(stmt.body) for r in s.slices()} & set(stmt.xs))


def operand_ints(*, dynamic: bool) -> st.SearchStrategy[ir.Int]:
    """A trip count or branch index: static, or read from ``dyn``."""
    return st.builds(ir.Int, COUNTS, st.booleans() if dynamic else st.just(False))


class Unseen(ir.Statement):
    """A statement a drawn one cannot name (a control statement, or one
    inside an earlier block): a placeholder in the ``body`` that ops draw
    after, whose positions are the statement numbers."""
    produces_value = False


UNSEEN = Unseen()


def seen(block: tuple) -> tuple:
    """What a statement drawn after ``block`` (inside the same scope) may
    name, by number: ``block``'s own statements, not their nested ones."""
    out = []
    for stmt in block:
        out.append(stmt)
        out.extend(UNSEEN for _ in range(ir.size(stmt) - 1))
    return tuple(out)


@st.composite
def blocks(draw, block, body, count: int, refs=None):
    """``count`` consecutive blocks drawn with ``block(visible, refs)``, the
    first after a control statement that follows ``body``; ``refs``: as the
    blocks see them (None: as the statement does)."""
    visible, out = (*body, UNSEEN), []
    for _ in range(count):
        b = draw(block(visible, refs))
        out.append(b)
        visible += tuple(UNSEEN for _ in ir.flat(b))
    return tuple(out)

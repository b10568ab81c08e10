"""What the control ops share: nested blocks written as inner functions,
run by the model, drawn by the caller's block strategy, and simplified."""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.base import Op

# How a drawn count or branch index looks: small, static or from ``dyn``;
# negative counts run nothing, as ``range`` does.
COUNTS = st.integers(-1, 3)


class ControlOp(Op):
    family = "control"

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

    def vary(self):
        return self.with_blocks(tuple(s.vary() for s in b) for b in self.blocks())

    def refused_under(self, transform, path):
        # A cond (lax.cond, lax.switch, pl.when): _cond_batching_rule says
        # "State effect not supported in vmap-of-cond". Inside a kernel,
        # pallas_call's own batching rule takes the cond.
        if self.primitive == "cond" and transform == "vmap" and path != "pallas_call":
            return "vmap of a cond with ref effects is not implemented"
        return None


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
def blocks(draw, block, body, count: int):
    """``count`` consecutive blocks drawn with ``block(visible)``, the first
    after a control statement that follows ``body``."""
    visible, out = (*body, UNSEEN), []
    for _ in range(count):
        b = draw(block(visible))
        out.append(b)
        visible += tuple(UNSEEN for _ in ir.flat(b))
    return tuple(out)

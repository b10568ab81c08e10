"""``jax.lax.cond`` (two branches: the second runs when ``index`` is not 0)
or ``jax.lax.switch`` (three or more: branch ``index``, clamped into range,
as lax.switch documents), over blocks that close over the refs. Binds
``cond``; the model runs the branch taken."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.control.common import ControlOp, blocks, operand_ints


@dataclass(frozen=True)
class Cond(ControlOp):
    index: ir.Int
    branches: tuple[tuple[ir.Statement, ...], ...]
    tag = "cond"
    public_call = "jax.lax.cond"
    primitive = "cond"
    block_fields = ("branches",)

    def check(self, case, n):
        if len(self.branches) < 2:
            raise ir.IRError(f"statement {n}: a cond has two branches or more")

    def taken(self) -> int:
        if len(self.branches) == 2:
            return int(self.index.value != 0)
        return min(max(self.index.value, 0), len(self.branches) - 1)

    def lines(self, e, n):
        index = e.operand(self.index)
        lines, names = [], []
        for b, (block, first) in enumerate(zip(self.branches, self.firsts(n))):
            names.append(f"branch{n}_{b}")
            lines += self.body_lines(e, block, first, f"def {names[-1]}():")
        if len(names) == 2:
            call = f"jax.lax.cond({index} != 0, {names[1]}, {names[0]})"
        else:
            call = f"jax.lax.switch({index}, [{', '.join(names)}])"
        return [*lines, (call, n)]

    def executed(self):
        return [self.taken()]

    def run(self, memory, n):
        return memory.run(self.branches[self.taken()], self.firsts(n)[self.taken()])

    def vary(self):
        varied = super().vary()
        if self.index.dynamic:
            return replace(varied, index=ir.Int(self.taken() ^ 1, True))
        return varied

    def simpler(self, case):
        for index in ir.simpler_ints(self.index):
            yield replace(self, index=index)

    @classmethod
    def draws(cls, refs, *, body=(), block=None, dynamic=True, **options):
        if block is None:
            return None
        return st.builds(cls, operand_ints(dynamic=dynamic),
                         st.integers(2, 3).flatmap(lambda k: blocks(block, body, k)))

"""``@pl.when(pred != 0)`` over a block: a ``cond`` with an empty false
branch (a static ``pred`` runs the block or not as Python, binding
nothing). The model runs the block when ``pred`` is not 0."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.control.common import ControlOp, blocks, operand_ints


@dataclass(frozen=True)
class When(ControlOp):
    pred: ir.Int
    body: tuple[ir.Statement, ...]
    tag = "when"
    public_call = "pl.when"
    pallas_api = True
    primitive = "cond"
    block_fields = ("body",)

    def lines(self, e, n):
        pred = e.operand(self.pred)
        return [(f"@pl.when({pred} != 0)", n),
                *self.body_lines(e, self.body, n + 1, f"def when{n}():")]

    def executed(self):
        return [0] if self.pred.value != 0 else []

    def run(self, memory, n):
        return memory.run(self.body, n + 1) if self.pred.value != 0 else None

    def vary(self):
        varied = super().vary()
        if self.pred.dynamic:
            return replace(varied, pred=ir.Int(int(self.pred.value == 0), True))
        return varied

    def simpler(self, case):
        for pred in ir.simpler_ints(self.pred):
            yield replace(self, pred=pred)

    @classmethod
    def draws(cls, refs, *, body=(), block=None, dynamic=True, **options):
        if block is None:
            return None
        return st.builds(lambda pred, b: cls(pred, b[0]), operand_ints(dynamic=dynamic),
                         blocks(block, body, 1))

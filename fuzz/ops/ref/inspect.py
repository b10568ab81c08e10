"""``jax.debug.callback(f, x)`` or ``jax.debug.print("{}", x)`` of a whole
data ref: the debug primitives' discharge rules (``debug_callback``,
``debug_print``) read the ref and must leave it as it is. The callback
ignores what it gets and the print goes to stdout, so only the invariants
of the discharge (avals, effects) and the ref's contents after are checked."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.ref.common import RefOp

VIA = ("callback", "print")


@dataclass(frozen=True)
class Inspect(RefOp):
    view: ir.View
    via: str = "callback"
    tag = "inspect"
    reads_only = True

    @property
    def primitive(self) -> str:
        return f"debug_{self.via}"

    def check(self, case, n):
        super().check(case, n)
        if self.via not in VIA:
            raise ir.IRError(f"statement {n}: inspect via {self.via!r}, not one of {VIA}")
        if self.view.named:
            raise ir.IRError(f"statement {n}: the debug primitives take a whole ref "
                             "(or a step's slice of one)")

    def source(self, e) -> str:
        ref = e.view(self.view)
        if self.via == "print":
            return f'jax.debug.print("r{self.view.ref} = {{}}", {ref})'
        return f"jax.debug.callback(lambda x: None, {ref})"

    def run(self, memory, n):
        return None

    def simpler(self, case):
        if self.via != "callback":
            yield replace(self, via="callback")

    def complexity(self) -> int:
        return self.via != "callback"

    @classmethod
    def draws(cls, refs, *, body=(), among=None, **options):
        usable = [i for i, r in enumerate(refs) if not r.is_semaphore
                  and (among is None or i in among)]
        if not usable:
            return None
        return st.builds(cls, st.sampled_from(usable).map(ir.View), st.sampled_from(VIA))

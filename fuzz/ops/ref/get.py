"""``v = x[idx]`` (or ``jax.ref.get(x, idx)``): read a view of a data ref
into a value later statements may use (`ir.Result`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.ref.common import RefOp, data_views


@dataclass(frozen=True)
class Get(RefOp):
    view: ir.View
    sugar: bool = True   # ``x[idx]``; False: ``jax.ref.get(x, idx)``
    tag = "get"
    primitive = "get"
    produces_value = True
    reads_only = True

    def source(self, e) -> str:
        ref, idx = e.split(self.view)
        if self.sugar:
            return f"v{e.n} = {ref}[{e.subscript(idx)}]"
        return f"v{e.n} = jax.ref.get({ref}, {e.indexer(idx)})"

    def needs(self):
        return () if self.sugar else ("jax.ref.get",)

    def run(self, memory, n):
        memory.values[n] = memory.elements(self.view)[memory.where(self.view)]

    def simpler(self, case):
        if not self.sugar:
            yield replace(self, sugar=True)

    def complexity(self) -> int:
        return not self.sugar

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        views = data_views(refs, among=among, dynamic=dynamic, max_chain=max_chain,
                           transforms=transforms)
        return None if views is None else st.builds(cls, views, st.booleans())

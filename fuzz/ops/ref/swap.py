"""``x[idx] = value`` (or ``old = jax.ref.swap(x, idx, value)``): store a
value into a view of a data ref."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.elements import names_twice
from fuzz.ops.ref.common import (RefOp, Value, constant_like, read_back, unspecified_store, value_mistakes, value_of, value_source,
                                 values, views_and_values, written)


@dataclass(frozen=True)
class Swap(RefOp):
    view: ir.View
    value: Value
    returns: bool = False   # ``jax.ref.swap``, whose old value later statements may use
    tag = "swap"
    primitive = "swap"

    @property
    def produces_value(self) -> bool:
        return self.returns

    def source(self, e) -> str:
        ref, idx = e.split(self.view)
        # The index before the value: their dynamic operands fill ``dyn`` in field order.
        index = e.indexer(idx) if self.returns else e.subscript(idx)
        value = value_source(e, self.value)
        if self.returns:
            return f"v{e.n} = jax.ref.swap({ref}, {index}, {value})"
        return f"{ref}[{index}] = {value}"

    def needs(self):
        return ("jax.ref.swap",) if self.returns else ()

    def run(self, memory, n):
        if why := unspecified_store(memory, n, self.view):
            return why
        new, _ = value_of(memory, self.value, self.ref_kind(memory.case))
        if self.returns:
            memory.values[n] = memory.elements(self.view)[memory.where(self.view)]
        written(memory, n, self.view, new)
        return None

    def mistakes(self, case):
        return super().mistakes(case) or value_mistakes(case, self.view, self.value)

    def simpler(self, case):
        if self.returns:
            yield replace(self, returns=False)
        if isinstance(self.value, ir.Result):
            yield replace(self, value=constant_like(case, self.value))

    def complexity(self) -> int:
        return self.returns + isinstance(self.value, ir.Result)

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        if (drawn := views_and_values(refs, body, among=among, dynamic=dynamic,
                                      max_chain=max_chain, transforms=transforms)) is None:
            return None
        views, earlier = drawn
        stores = views.filter(lambda v: not names_twice(refs, v)).flatmap(
            lambda view: st.builds(cls, st.just(view), values(refs, view, earlier),
                                   st.booleans()))
        if (back := read_back(refs, body, among, lambda v: not names_twice(refs, v))) is None:
            return stores
        return st.one_of(stores, back.flatmap(lambda nv: st.builds(
            cls, st.just(nv[1]), st.just(ir.Result(nv[0])), st.booleans())))

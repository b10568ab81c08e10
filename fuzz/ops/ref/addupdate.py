"""``jax.ref.addupdate(x, idx, value)``: add a value into a view of a data
ref; an element the view names twice gets both additions, as with
``np.add.at``. (``x[idx] += value`` is not this primitive: it is a get and
a swap.)"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.ref.common import (RefOp, Value, constant_like, value_mistakes, value_of,
                                 value_source, values, views_and_values)
from strategies.transforms import TRANSFORM_KINDS


@dataclass(frozen=True)
class AddUpdate(RefOp):
    view: ir.View
    value: Value
    tag = "addupdate"
    primitive = "addupdate"

    def source(self, e) -> str:
        ref, at = e.split(self.view)
        return f"jax.ref.addupdate({ref}, {e.indexer(at)}, {value_source(e, self.value)})"

    def needs(self):
        return ("jax.ref.addupdate",)

    def run(self, memory, n):
        flat = memory.elements(self.view)
        pos = memory.where(self.view).reshape(-1)
        new, _ = value_of(memory, self.value, self.ref_kind(memory.case))
        before = flat.copy()
        np.add.at(flat, pos, np.asarray(new, flat.dtype).reshape(-1))
        memory.writers[self.view.ref].reshape(-1)[before != flat] = n

    def mistakes(self, case):
        if found := super().mistakes(case):
            return found
        if any(isinstance(t, ir.Bitcast) for t in self.view.transforms):
            return {"addupdate_bitcast"}   # JAX refuses: read-modify-write instead
        return value_mistakes(case, self.view, self.value)

    def simpler(self, case):
        if isinstance(self.value, ir.Result):
            yield replace(self, value=constant_like(case, self.value))

    def complexity(self) -> int:
        return isinstance(self.value, ir.Result)

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        # JAX discharges addupdate through at most one indexer, the last
        # transform: mostly drawn so ("Multiple indexers are not supported
        # for `addupdate`" refuses the rest, valid views). Not through a
        # bitcast (a mistake: `addupdate_bitcast`).
        kinds = tuple(k for k in (TRANSFORM_KINDS if transforms is None else transforms)
                      if k != "bitcast")
        if (drawn := views_and_values(refs, body, among=among, dynamic=dynamic, max_chain=max_chain,
                                      transforms=kinds, prefer_last_at=True)) is None:
            return None
        views, earlier = drawn
        return views.flatmap(lambda view: st.builds(cls, st.just(view),
                                                    values(refs, view, earlier)))

"""``pltpu.store(x.at[idx], value, mask=m)``: the ``masked_swap`` primitive.
Lanes where ``m`` is on take ``value``; the others keep what they held.
Mosaic wants the mask exactly the value's shape ("Expected value and mask
to have the same shape", jax/_src/pallas/mosaic/lowering.py), so a valid
program's mask has the view's shape. ``pltpu.store`` without a mask binds
the same primitive as a plain store."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from fuzz import ir
from fuzz.elements import names_twice
from fuzz.ops.ref.common import (Mask, RefOp, Value, constant_like, masked_indexable, masks,
                                 unspecified_store, value_mistakes, value_of,
                                 value_source, values, views_and_values, written)


@st.composite
def _stores(draw, cls, refs, views, earlier):
    """A masked store of `MaskedStore.draws`."""
    view = draw(views.filter(lambda v: masked_indexable(refs, v)
                             and not names_twice(refs, v)))
    mask = draw(st.none() | masks(ir.view_shape(refs, view)))
    return cls(view, draw(values(refs, view, earlier)), mask)


@dataclass(frozen=True)
class MaskedStore(RefOp):
    view: ir.View
    value: Value
    mask: Mask | None = None
    tag = "masked_store"
    public_call = "pltpu.store"
    pallas_api = True
    primitive = "masked_swap"

    def source(self, e) -> str:
        mask = "" if self.mask is None else f", mask={self.mask.source(e)}"
        return f"pltpu.store({e.view(self.view)}, {value_source(e, self.value)}{mask})"

    def needs(self):
        return ("pltpu.store",)

    def run(self, memory, n):
        if why := unspecified_store(memory, n, self.view):
            return why
        new, _ = value_of(memory, self.value, self.ref_kind(memory.case))
        old = memory.elements(self.view)[memory.where(self.view)]
        on = True if self.mask is None else self.mask.array()
        written(memory, n, self.view, np.where(on, np.asarray(new, old.dtype), old))
        return None

    def mistakes(self, case):
        found = super().mistakes(case) or value_mistakes(case, self.view, self.value)
        if found or self.mask is None or self.mask.shape == ir.view_shape(case, self.view):
            return found
        return {"store_mask_shape"}

    def simpler(self, case):
        if self.mask is not None:
            yield from (replace(self, mask=m) for m in self.mask.simpler())
            yield replace(self, mask=None)
        if isinstance(self.value, ir.Result):
            yield replace(self, value=constant_like(case, self.value))

    def complexity(self) -> int:
        return (self.mask is not None) + isinstance(self.value, ir.Result)

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        if (drawn := views_and_values(refs, body, among=among, dynamic=dynamic,
                                      max_chain=max_chain, transforms=transforms)) is None:
            return None
        views, earlier = drawn

        return _stores(cls, refs, views, earlier)

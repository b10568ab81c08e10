"""``v = pltpu.load(x.at[idx], mask=m)``, or with ``other=`` through
``plgpu.load`` (Pallas' Triton API; JAX 0.12 has no public ``pl.load``):
the ``masked_load`` primitive. Lanes where ``m`` is off read ``other``; with
no ``other`` they are unspecified ("no assumptions can be made about the
value", ``pallas.load``'s docstring), so that value is never used later.
``pltpu.load`` without a mask binds the same primitive as a plain read."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.ref.common import (FLOATING, Mask, RefOp, Scalar, Value, broadcastable,
                                 masked_indexable, masks, value_of, value_source, values,
                                 views_and_values)


def fits(mask: Mask, shape: tuple[int, ...]) -> bool:
    """Whether ``mask`` broadcasts *to* ``shape`` (the loaded value's)."""
    try:
        return np.broadcast_shapes(shape, mask.shape) == tuple(shape)
    except ValueError:
        return False


@st.composite
def _loads(draw, cls, refs, views, earlier):
    """A masked load of `MaskedLoad.draws`."""
    view = draw(views.filter(lambda v: masked_indexable(refs, v)))
    shape = ir.view_shape(refs, view)
    mask = draw(st.none() | broadcastable(shape).flatmap(masks))
    if not draw(st.booleans()):
        return cls(view, mask)
    # ``other`` broadcasts against the loaded lanes, as jnp.where does.
    kind = ir.view_dtype(refs, view)
    scalar = st.integers(0, 20).map(
        float if kind in FLOATING else bool if kind == "bool" else int).map(Scalar)
    return cls(view, mask, draw(values(refs, view, earlier) | scalar))


@dataclass(frozen=True)
class MaskedLoad(RefOp):
    view: ir.View
    mask: Mask | None = None
    other: Value | None = None
    tag = "masked_load"
    public_call = "pltpu.load"
    pallas_api = True
    primitive = "masked_load"
    reads_only = True

    @property
    def produces_value(self) -> bool:
        return self.mask is None or self.other is not None

    def source(self, e) -> str:
        ref = e.view(self.view)
        if self.other is not None:
            mask = "None" if self.mask is None else self.mask.source(e)
            return f"v{e.n} = plgpu.load({ref}, mask={mask}, other={value_source(e, self.other)})"
        mask = "" if self.mask is None else f", mask={self.mask.source(e)}"
        return f"v{e.n} = pltpu.load({ref}{mask})"

    def needs(self):
        return ("plgpu.load",) if self.other is not None else ("pltpu.load",)

    def run(self, memory, n):
        got = memory.elements(self.view)[memory.where(self.view)]
        if self.other is not None:
            other, _ = value_of(memory, self.other, self.ref_kind(memory.case))
            on = True if self.mask is None else self.mask.array()
            got = np.where(on, got, np.asarray(other, got.dtype))
        memory.values[n] = got

    def mistakes(self, case):
        found = super().mistakes(case)
        if found or self.mask is None:
            return found
        if not fits(self.mask, ir.view_shape(case, self.view)):
            return {"load_mask_shape"}
        return set()

    def simpler(self, case):
        if self.mask is not None:
            yield from (replace(self, mask=m) for m in self.mask.simpler())
            if self.other is not None:
                yield replace(self, mask=None)
        if self.other is not None and self.mask is None:
            yield replace(self, other=None)

    def complexity(self) -> int:
        return (self.mask is not None) + (self.other is not None)

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        if (drawn := views_and_values(refs, body, among=among, dynamic=dynamic,
                                      max_chain=max_chain, transforms=transforms)) is None:
            return None
        views, earlier = drawn

        return _loads(cls, refs, views, earlier)

"""The mistakes a data-ref statement can make, each with the clean error a
user should get (the names match each op's ``mistakes``)."""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.base import Mistake
from fuzz.ops.ref.addupdate import AddUpdate
from fuzz.ops.ref.common import Iota, Mask
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.masked_load import MaskedLoad
from fuzz.ops.ref.masked_store import MaskedStore
from fuzz.ops.ref.swap import Swap
from strategies.semaphores import semaphore_shapes, zero_size_index
from strategies.transforms import same_width_dtypes

OUT_OF_BOUNDS = ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)")
VALUE_SHAPE = ir.ExpectedError("ValueError", r"Invalid shape for `swap`")
VALUE_DTYPE = ir.ExpectedError("ValueError", r"Invalid dtype for `swap`")
MASK_SHAPE = ir.ExpectedError("ValueError", r"(?i)mask")
# 0.12 documents the refusal; 0.10 discharges no bitcast view at all.
ADDUPDATE_BITCAST = ir.ExpectedError("NotImplementedError", r"not supported on bitcast views|"
                                     r"Unsupported transform: BitcastTransform")

_KINDS = ("int8", "int32", "uint8", "float16", "float32", "bool")


def _refs():
    return st.builds(ir.Ref, st.sampled_from(_KINDS), semaphore_shapes(min_dims=1, min_side=1))


@st.composite
def _out_of_bounds(draw, refs):
    ref, indices = draw(zero_size_index(_refs()))
    view = ir.View(len(refs), (ir.At(indices),))
    stmt = draw(st.sampled_from((Get(view), Swap(view, Iota(ref.kind, ())))))
    return ref, stmt, OUT_OF_BOUNDS


@st.composite
def _value_shape(draw, refs):
    ref = draw(_refs())
    shape = draw(st.lists(st.integers(1, 3), max_size=3).map(tuple).filter(
        lambda s: s != ref.shape))
    return ref, Swap(ir.View(len(refs)), Iota(ref.kind, shape)), VALUE_SHAPE


@st.composite
def _value_dtype(draw, refs):
    ref = draw(_refs())
    dtype = draw(st.sampled_from([k for k in _KINDS if k != ref.kind]))
    return ref, Swap(ir.View(len(refs)), Iota(dtype, ref.shape)), VALUE_DTYPE


@st.composite
def _load_mask_shape(draw, refs):
    ref = draw(_refs())
    # A last dimension that is neither the ref's nor 1 never broadcasts.
    last = draw(st.integers(2, 5).filter(lambda d: d != ref.shape[-1]))
    return ref, MaskedLoad(ir.View(len(refs)), Mask((last,))), MASK_SHAPE


@st.composite
def _store_mask_shape(draw, refs):
    ref = draw(_refs())
    shape = draw(st.lists(st.integers(1, 3), max_size=3).map(tuple).filter(
        lambda s: s != ref.shape))
    return ref, MaskedStore(ir.View(len(refs)), Iota(ref.kind, ref.shape), Mask(shape)), MASK_SHAPE


@st.composite
def _addupdate_bitcast(draw, refs):
    ref = draw(st.builds(ir.Ref, st.sampled_from(("int32", "float32", "int16", "uint8")),
                         st.tuples(st.integers(2, 3), st.integers(1, 3))))
    dtype = draw(st.sampled_from(same_width_dtypes(ref.kind)))
    return (ref, AddUpdate(ir.View(len(refs), (ir.Bitcast(dtype),)), Iota(dtype, ref.shape)),
            ADDUPDATE_BITCAST)


MISTAKES = (
    Mistake("data_out_of_bounds", _out_of_bounds),
    Mistake("value_shape", _value_shape),
    Mistake("value_dtype", _value_dtype),
    Mistake("load_mask_shape", _load_mask_shape),
    Mistake("store_mask_shape", _store_mask_shape),
    Mistake("addupdate_bitcast", _addupdate_bitcast),
)

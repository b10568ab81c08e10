"""The mistakes a copy can make, each with the clean error a user should
get (the names match `DmaOp.mistakes`). A copy needs a source, a
destination and a semaphore, so a mistake brings the refs it needs (a
tuple of new refs, numbered after the program's)."""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.base import Mistake
from fuzz.ops.dma.start import DmaStart

SEMAPHORE_KIND = ir.ExpectedError("ValueError", r"requires a DMA semaphore")
SEMAPHORE_SHAPE = ir.ExpectedError("ValueError", r"non-\(\)-shaped semaphore")
SHAPE = ir.ExpectedError("ValueError|TypeError", r"(?i)shape")
DTYPE = ir.ExpectedError("ValueError|TypeError", r"(?i)dtype")
OUT_OF_BOUNDS = ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)")

_DATA = ("int32", "float32", "int8", "bfloat16")


def _rows(data: int, a: int, b: int, sem: ir.View) -> DmaStart:
    return DmaStart(ir.View(data, (ir.At((ir.Int(a),)),)), ir.View(data, (ir.At((ir.Int(b),)),)),
                    sem)


@st.composite
def _semaphore_kind(draw, refs):
    """A copy counted on a regular or barrier semaphore, or on a data ref."""
    data = ir.Ref(draw(st.sampled_from(_DATA)), (2, draw(st.integers(1, 3))))
    sem = ir.Ref(draw(st.sampled_from(("regular", "barrier", "float32", "int32"))), (2,))
    n = len(refs)
    return (data, sem), _rows(n, 0, 1, ir.View(n + 1, (ir.At((ir.Int(0),)),))), SEMAPHORE_KIND


@st.composite
def _semaphore_shape(draw, refs):
    """A copy counted on a whole array of DMA semaphores."""
    data = ir.Ref(draw(st.sampled_from(_DATA)), (2, 2))
    sem = ir.Ref("dma", (draw(st.integers(2, 3)),))
    n = len(refs)
    return (data, sem), _rows(n, 0, 1, ir.View(n + 1)), SEMAPHORE_SHAPE


@st.composite
def _shape(draw, refs):
    """A copy between views of different shapes (rows of one ref)."""
    data = ir.Ref(draw(st.sampled_from(_DATA)), (4, draw(st.integers(1, 3))))
    size = draw(st.integers(1, 2))
    n = len(refs)
    src = ir.View(n, (ir.At((ir.Slice(0, size),)),))
    other = draw(st.integers(1, 4 - size).filter(lambda m: m != size))
    dst = ir.View(n, (ir.At((ir.Slice(size, size + other),)),))
    return (data, ir.Ref("dma", ())), DmaStart(src, dst, ir.View(n + 1)), SHAPE


@st.composite
def _dtype(draw, refs):
    """A copy between refs of one shape and different dtypes."""
    kinds = draw(st.lists(st.sampled_from(_DATA), min_size=2, max_size=2, unique=True))
    shape = (draw(st.integers(1, 3)),)
    n = len(refs)
    return ((ir.Ref(kinds[0], shape), ir.Ref(kinds[1], shape), ir.Ref("dma", ())),
            DmaStart(ir.View(n), ir.View(n + 1), ir.View(n + 2)), DTYPE)


@st.composite
def _out_of_bounds(draw, refs):
    """A copy of a row past the end of its ref."""
    rows = draw(st.integers(1, 3))
    data = ir.Ref(draw(st.sampled_from(_DATA)), (rows, 2))
    bad = draw(st.integers(rows, rows + 2) | st.integers(-rows - 2, -rows - 1))
    n = len(refs)
    target = draw(st.integers(0, rows - 1))
    pair = (bad, target) if draw(st.booleans()) else (target, bad)
    return (data, ir.Ref("dma", ())), _rows(n, *pair, ir.View(n + 1)), OUT_OF_BOUNDS


MISTAKES = (
    Mistake("dma_semaphore_kind", _semaphore_kind),
    Mistake("dma_semaphore_shape", _semaphore_shape),
    Mistake("dma_shape", _shape),
    Mistake("dma_dtype", _dtype),
    Mistake("dma_out_of_bounds", _out_of_bounds),
)

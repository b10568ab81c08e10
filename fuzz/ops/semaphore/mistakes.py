"""The mistakes a semaphore statement can make, each with the clean error a
user should get (the names match each op's ``mistakes``)."""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.base import Mistake
from fuzz.ops.semaphore.read import Read
from fuzz.ops.semaphore.signal import Signal
from fuzz.ops.semaphore.wait import Wait
from strategies.semaphores import semaphores, zero_size_index
from strategies.transforms import transform_chains

NON_SCALAR = ir.ExpectedError("ValueError", r"non-\(\)-shaped semaphore")
WRONG_DTYPE = ir.ExpectedError("ValueError", r"semaphores of the following types")
OUT_OF_BOUNDS = ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)")
BITCAST = ir.ExpectedError("NotImplementedError|ValueError", r"(?i)bitcast")
OVERFLOW = ir.ExpectedError("OverflowError", r"out of bounds for int32")
REMOTE = ir.ExpectedError("NotImplementedError", r"Remote signal not implemented")
MULTI_CORE = ir.ExpectedError("NotImplementedError", r"Multiple core support not implemented")
NEGATIVE_STEP = ir.ExpectedError("ValueError", r"step >= 1")

_OPS = {"signal": Signal, "wait": Wait, "read": Read}
_COUNTING = ("regular", "barrier", "int16")


def _statement(op, view, value=ir.Int(1)):
    if op == "read":
        return Read(view)
    return _OPS[op](view, value)


def _small_decl():
    return semaphores(shapes=st.sampled_from([(), (2,), (2, 2)]), kinds=_COUNTING)


@st.composite
def _non_scalar_view(draw, refs):
    op = draw(st.sampled_from(tuple(_OPS)))
    ref = draw(semaphores(kinds=_COUNTING, shapes=st.lists(
        st.integers(1, 4), min_size=1, max_size=3).map(tuple)))
    chain = draw(transform_chains(ref.shape, scalar=False))
    if ir.view_shape((ref,), ir.View(0, chain)) == ():
        chain = ()
    return ref, _statement(op, ir.View(len(refs), chain)), NON_SCALAR


@st.composite
def _wrong_dtype(draw, refs):
    op = draw(st.sampled_from(tuple(_OPS)))
    kinds = ("int32", "float32") if op == "read" else ("dma", "int32", "float32")
    ref = draw(semaphores(kinds=kinds))
    if 0 in ref.shape:
        ref = ir.Ref(ref.kind, (), ref.scoped)
    chain = draw(transform_chains(ref.shape))
    return ref, _statement(op, ir.View(len(refs), chain)), WRONG_DTYPE


@st.composite
def _out_of_bounds(draw, refs):
    op = draw(st.sampled_from(tuple(_OPS)))
    ref, indices = draw(zero_size_index(semaphores(kinds=_COUNTING, shapes=st.lists(
        st.integers(1, 4), min_size=1, max_size=3).map(tuple))))
    return ref, _statement(op, ir.View(len(refs), (ir.At(indices),))), OUT_OF_BOUNDS


@st.composite
def _bitcast(draw, refs):
    op = draw(st.sampled_from(tuple(_OPS)))
    ref = draw(_small_decl())
    chain = draw(transform_chains(ref.shape))
    # An int16 ref bitcast to int16 is a no-op, not a mistake.
    t = ir.Bitcast(draw(st.sampled_from(
        [d for d in ir.BITCAST_DTYPES if not (ref.kind == "int16" == d)])))
    at = draw(st.integers(0, len(chain)))
    return ref, _statement(op, ir.View(len(refs), (*chain[:at], t, *chain[at:]))), BITCAST


@st.composite
def _negative_step(draw, refs):
    op = draw(st.sampled_from(tuple(_OPS)))
    ref = draw(_small_decl())
    chain = draw(transform_chains(ref.shape))
    ref = ir.Ref(ref.kind, (3, *ref.shape), ref.scoped)
    step = draw(st.integers(-2, -1))
    view = ir.View(len(refs), (ir.At((ir.Slice(None, None, step),)), ir.At((ir.Int(0),)), *chain))
    return ref, _statement(op, view), NEGATIVE_STEP


@st.composite
def _overflow(draw, refs):
    ref = draw(_small_decl())
    view = ir.View(len(refs), draw(transform_chains(ref.shape)))
    value = ir.Int(draw(st.integers(2**31, 2**40) | st.integers(-2**40, -2**31 - 1)))
    return ref, _statement(draw(st.sampled_from(("signal", "wait"))), view, value), OVERFLOW


@st.composite
def _remote(draw, refs):
    ref = draw(_small_decl())
    view = ir.View(len(refs), draw(transform_chains(ref.shape)))
    device_id = draw(st.builds(ir.Int, st.integers(0, 3), st.booleans()))
    id_type = draw(st.sampled_from((None, "mesh", "logical")))
    return ref, Signal(view, ir.Int(1), device_id=device_id, device_id_type=id_type), REMOTE


@st.composite
def _core_index(draw, refs):
    ref = draw(_small_decl())
    view = ir.View(len(refs), draw(transform_chains(ref.shape)))
    core = draw(st.builds(ir.Int, st.integers(0, 1), st.booleans()))
    return ref, Signal(view, ir.Int(1), core_index=core), MULTI_CORE


MISTAKES = (
    Mistake("non_scalar_view", _non_scalar_view),
    Mistake("wrong_dtype", _wrong_dtype),
    Mistake("out_of_bounds", _out_of_bounds),
    Mistake("bitcast", _bitcast),
    Mistake("overflow", _overflow),
    Mistake("remote", _remote),
    Mistake("core_index", _core_index),
    Mistake("negative_step", _negative_step),
)

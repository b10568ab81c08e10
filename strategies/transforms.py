"""Strategies for views: indexers and ref-transform chains over a shape."""
from __future__ import annotations

import math

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fuzz import ir

# A bitcast is drawn only over a data ref (``dtype`` given to the chain) and
# only to a dtype of the same width: a narrowing or widening one has no one
# element of the ref per element of the view.
TRANSFORM_KINDS = ("at", "reshape", "transpose", "bitcast")


def same_width_dtypes(dtype: str) -> tuple[str, ...]:
    """The dtypes a bitcast of ``dtype`` may name that have its width (none
    for bool and the 64-bit dtypes).

    >>> same_width_dtypes("float32")
    ('int32', 'uint32')
    """
    if dtype not in ir.DATA_DTYPES or dtype == "bool":
        return ()
    return tuple(d for d in ir.BITCAST_DTYPES
                 if d != dtype and ir.dtype_bits(d) == ir.dtype_bits(dtype))


def index_operands(n: int, *, dynamic=True) -> st.SearchStrategy[ir.Int]:
    """An in-bounds integer index into a dimension of size ``n``: static
    (negative allowed) or dynamic (non-negative: dynamic indices are not
    wrapped). Shrinks towards static 0.

    >>> index_operands(4).example()
    Int(value=-3, dynamic=False)
    """
    if n < 1:
        raise InvalidArgument(f"no index into a dimension of size {n}")
    static = st.integers(-n, n - 1).map(ir.Int)
    if not dynamic:
        return static
    return st.one_of(static, st.integers(0, n - 1).map(lambda v: ir.Int(v, True)))


@st.composite
def _slices(draw, n):
    bound = st.none() | st.integers(-n - 1, n + 1)
    # Negative steps are left to invalid programs: JAX rejects them cleanly.
    s = ir.Slice(draw(bound), draw(bound), draw(st.none() | st.sampled_from((1, 2, 3))))
    if not range(n)[slice(s.start, s.stop, s.step)]:
        # Keep intermediate views non-empty, so a scalar can still be reached.
        return ir.Slice()
    return s


@st.composite
def _ds(draw, n, dynamic):
    size = draw(st.integers(1, n))
    start = draw(st.integers(0, n - size))
    dyn = dynamic and draw(st.booleans())
    return ir.Ds(ir.Int(start, dyn), size)


def _int_arrays(n, length):
    # Always traced: a constant array in a kernel is a captured constant,
    # which pallas_call rejects by design ("pass them as inputs").
    return st.lists(st.integers(-n, n - 1), min_size=length, max_size=length).map(
        lambda vs: ir.IntArray(tuple(vs), True))


@st.composite
def _with_ellipsis(draw, indices):
    """Optionally trim trailing full slices, or fold a run of them into ``...``."""
    full = [isinstance(i, ir.Slice) and i == ir.Slice() for i in indices]
    choice = draw(st.sampled_from(("as_is", "trim", "ellipsis")))
    if choice == "trim":
        while indices and full[len(indices) - 1]:
            indices = indices[:-1]
    elif choice == "ellipsis":
        a = draw(st.integers(0, len(indices)))
        b = a
        while b < len(indices) and full[b]:
            b += 1
        b = draw(st.integers(a, b))
        indices = [*indices[:a], ir.Ellipsis_(), *indices[b:]]
    return tuple(indices)


@st.composite
def at_indexers(draw, shape, *, dynamic=True):
    """One ``.at[...]`` over a non-empty ``shape`` whose result is non-empty.

    >>> at_indexers((4, 2)).example()
    At(indices=(Slice(start=None, stop=None, step=2), Ellipsis_()))
    """
    if not shape or 0 in shape:
        raise InvalidArgument(f"at_indexers needs a non-empty array shape, got {shape}")
    length = draw(st.integers(1, 3))
    indices = [draw(st.one_of(
        st.just(ir.Slice()), index_operands(n, dynamic=dynamic), _slices(n),
        _ds(n, dynamic), *([_int_arrays(n, length)] if dynamic else []))) for n in shape]
    return ir.At(draw(_with_ellipsis(indices)))


@st.composite
def scalar_indexers(draw, shape, *, dynamic=True):
    """An ``.at[...]`` that takes ``shape`` to a single element (``()``)."""
    if 0 in shape:
        raise InvalidArgument(f"no element to index in shape {shape}")
    indices = [draw(index_operands(n, dynamic=dynamic)) for n in shape]
    if draw(st.booleans()):
        indices.insert(draw(st.integers(0, len(indices))), ir.Ellipsis_())
    return ir.At(tuple(indices))


@st.composite
def reshapes(draw, shape):
    """A reshape to another shape with as many elements (``()`` for one)."""
    size, dims = math.prod(shape), []
    for _ in range(draw(st.integers(0, 3))):
        d = draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
        dims.append(d)
        size //= d
    if size != 1:
        dims.append(size)
    return ir.Reshape(tuple(dims))


def _applicable(shape, dtype, kinds):
    nonempty = math.prod(shape) > 0
    return [k for k in kinds if
            (k == "at" and shape and nonempty) or
            (k == "reshape" and nonempty) or
            (k == "transpose" and len(shape) >= 2) or
            (k == "bitcast" and dtype is not None and same_width_dtypes(dtype))]


@st.composite
def transform_chains(draw, shape, *, max_length=3, scalar=True, dynamic=True,
                     kinds=TRANSFORM_KINDS, dtype=None):
    """A chain of view transforms over a ref of ``shape``. With ``scalar`` (the
    default) the chain ends in a ``()``-shaped view, as semaphore operations
    need. Bitcasts only with the ref's ``dtype`` given (a data ref), each to
    a dtype of the width the view has. Shrinks towards the shortest chain.

    >>> transform_chains((2, 3)).example()
    (Transpose(permutation=(1, 0)), At(indices=(Int(value=2, dynamic=False), Int(value=0, dynamic=True))))
    """
    shape = tuple(shape)
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise InvalidArgument(f"shape={shape!r} must be a tuple of non-negative ints")
    if not isinstance(max_length, int) or max_length < 0:
        raise InvalidArgument(f"max_length={max_length!r} must be an int >= 0")
    if bad := [k for k in kinds if k not in TRANSFORM_KINDS]:
        raise InvalidArgument(f"kinds {bad} not in {TRANSFORM_KINDS}")
    if scalar and 0 in shape:
        raise InvalidArgument(f"shape {shape} has no element: no scalar view")
    chain = []
    for _ in range(draw(st.integers(0, max_length))):
        options = _applicable(shape, dtype, kinds)
        if not options:
            break
        kind = draw(st.sampled_from(options))
        if kind == "at":
            t = draw(at_indexers(shape, dynamic=dynamic))
        elif kind == "reshape":
            t = draw(reshapes(shape))
        elif kind == "bitcast":
            t = ir.Bitcast(draw(st.sampled_from(same_width_dtypes(dtype))))
            dtype = t.dtype
        else:
            t = ir.Transpose(tuple(draw(st.permutations(range(len(shape))))))
        bits = ir.dtype_bits(dtype) if dtype is not None else ir.SEMAPHORE_BITS
        shape, _ = ir.apply_transform(shape, bits, t)
        chain.append(t)
    if scalar and shape != ():
        chain.append(draw(scalar_indexers(shape, dynamic=dynamic)))
    return tuple(chain)

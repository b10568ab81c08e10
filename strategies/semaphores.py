"""Strategies for semaphore declarations: kinds and shapes."""
from __future__ import annotations

import dataclasses

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fuzz import ir


def _check_int(name, value, lo=0):
    if not isinstance(value, int) or isinstance(value, bool) or value < lo:
        raise InvalidArgument(f"{name}={value!r} must be an int >= {lo}")


def semaphore_kinds(kinds=ir.SEMAPHORE_KINDS) -> st.SearchStrategy[str]:
    """Semaphore kinds: ``pltpu.SemaphoreType`` members or the int16 interpret dtype.

    >>> semaphore_kinds(kinds=("regular", "int16")).example()
    'int16'
    """
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in ir.KINDS]
    if not kinds or bad:
        raise InvalidArgument(f"kinds={kinds!r}: each must be one of {ir.KINDS}")
    return st.sampled_from(kinds)


def semaphore_shapes(*, min_dims=0, max_dims=3, min_side=0, max_side=4
                     ) -> st.SearchStrategy[tuple[int, ...]]:
    """Semaphore array shapes, ``()`` and zero-size dimensions included.
    Shrinks towards ``()``.

    >>> semaphore_shapes(min_dims=1, max_side=3).example()
    (3, 0)
    """
    for name, v in (("min_dims", min_dims), ("max_dims", max_dims),
                    ("min_side", min_side), ("max_side", max_side)):
        _check_int(name, v)
    if min_dims > max_dims or min_side > max_side:
        raise InvalidArgument(f"need min_dims <= max_dims and min_side <= max_side, got "
                              f"{min_dims}..{max_dims}, {min_side}..{max_side}")
    # Sides shrink towards 1 rather than 0 so a shrunk shape stays usable.
    side = st.integers(max(min_side, 1), max_side) if max_side >= 1 else st.just(0)
    if min_side == 0 and max_side >= 1:
        # One side in eight is 0: zero-size refs are an edge case, not half
        # of all shapes (a zero-size operand stops every Pallas path at a
        # known crash). Not one_of(*[side] * 7, just(0)): one_of drops the
        # repeated strategy, and that drew 0 for about one side in four.
        side = st.tuples(st.integers(0, 7), side).map(lambda ks: 0 if ks[0] == 7 else ks[1])
    return st.lists(side, min_size=min_dims, max_size=max_dims).map(tuple)


def semaphores(*, kinds=ir.SEMAPHORE_KINDS, shapes=None, scoped=None
               ) -> st.SearchStrategy[ir.Ref]:
    """Semaphore declarations.

    >>> semaphores(kinds=("int16",), shapes=st.just((4,))).example()
    Semaphore(kind='int16', shape=(4,), scoped=False)
    """
    shapes = semaphore_shapes() if shapes is None else shapes
    scoped = st.booleans() if scoped is None else scoped
    for name, s in (("shapes", shapes), ("scoped", scoped)):
        if not isinstance(s, st.SearchStrategy):
            raise InvalidArgument(f"{name}={s!r} must be a strategy")
    return st.builds(ir.Ref, semaphore_kinds(kinds), shapes, scoped)


@st.composite
def zero_size_index(draw, refs: st.SearchStrategy[ir.Ref]):
    """(a ref of ``refs`` with one axis made zero-size, static integer
    indices into it, that axis's out of bounds): the one out-of-bounds static
    index JAX defines as an error. Any other it clamps, its documented rule
    for indexing; an axis of size 0 has nothing to clamp to (``jnp`` raises
    IndexError)."""
    ref = draw(refs)
    if not ref.shape:
        raise InvalidArgument(f"{ref!r} has no axis to index")
    axis = draw(st.integers(0, len(ref.shape) - 1))
    shape = tuple(0 if d == axis else n for d, n in enumerate(ref.shape))
    bad = draw(st.integers(0, 3) | st.integers(-3, -1))
    return (dataclasses.replace(ref, shape=shape),
            tuple(ir.Int(bad if d == axis else 0) for d in range(len(shape))))

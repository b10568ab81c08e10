"""Which elements of a ref a view denotes, as the reference model
(`fuzz.model`) counts them, and the NumPy dtype they have: what the ops ask
of a view outside a running model (a race check, a known finding's
trigger, a drawn copy's operands). A view denotes the elements NumPy would
give for the same chain of transforms on the ref's array; where it denotes
none (out of bounds, a bitcast across widths) the model has no meaning
(`ModelError`).
"""
from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

from fuzz import ir


class ModelError(ValueError):
    """The model has no meaning for this statement (it is not a valid program)."""


def positions(shape: tuple[int, ...], view: ir.View, bits: int = ir.SEMAPHORE_BITS
              ) -> np.ndarray:
    """The flat positions (C order) of the elements ``view`` denotes in an
    array of ``shape``, shaped like the view.

    >>> positions((2, 3), ir.View(0, (ir.At((ir.Int(1),)), ir.At((ir.Int(-1),)))))
    array(5)
    """
    arr = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    for t in view.transforms:
        match t:
            case ir.At() if t == ir.STEP:
                # Every step's slice has this structure; a run binds its
                # step first (ir.bound), so this is for questions of structure.
                if not arr.ndim or not arr.shape[0]:
                    raise ModelError(f"a step's slice of shape {arr.shape}")
                arr = arr[0]
            case ir.At():
                try:
                    arr = arr[tuple(ir.index_key(i) for i in t.indices)]
                except (IndexError, ValueError, TypeError) as e:
                    raise ModelError(f"index {t} on shape {arr.shape}: {e}") from None
            case ir.Reshape():
                if math.prod(t.shape) != arr.size:
                    raise ModelError(f"cannot reshape {arr.shape} into {t.shape}")
                arr = arr.reshape(t.shape)
            case ir.Transpose():
                if sorted(t.permutation) != list(range(arr.ndim)):
                    raise ModelError(f"permutation {t.permutation} for shape {arr.shape}")
                arr = arr.transpose(t.permutation)
            case ir.Bitcast() if ir.dtype_bits(t.dtype) == bits:
                pass  # same width: the same elements, reinterpreted
            case ir.Bitcast():
                # An element split across (or merged from) elements of another
                # width is no one element of the ref.
                raise ModelError(f"bitcast of {bits}-bit elements to {t.dtype}")
    return np.asarray(arr)


def element(shape: tuple[int, ...], view: ir.View) -> tuple[int, ...]:
    """The one element a scalar view denotes, as a full index into ``shape``.

    >>> element((2, 2), ir.View(0, (ir.Reshape((4,)), ir.At((ir.Int(3),)))))
    (1, 1)
    """
    pos = positions(shape, view)
    if pos.shape != ():
        raise ModelError(f"view of shape {pos.shape} is not one element")
    return tuple(int(i) for i in np.unravel_index(int(pos), shape))


def dtype(kind: str) -> np.dtype:
    """The NumPy dtype of a data ref (bfloat16 from ml_dtypes, as JAX uses)."""
    return np.dtype(ml_dtypes.bfloat16) if kind == "bfloat16" else np.dtype(kind)


def canonical(case: ir.Case) -> ir.Case | None:
    """``case`` with every view rewritten as one static ``.at[i, j, ...]`` of
    the element it denotes (in a step's slice, for a view that takes one):
    the same program by the model's semantics, through a different (the
    simplest) transform chain. None when some view is not one element, or is
    bitcast (its dtype would be lost)."""
    def inside(view):
        """(the shape the view indexes, the view with no step)."""
        shape = tuple(case.refs[view.ref].shape)
        return (shape[1:], ir.View(view.ref, view.named)) if view.named != view.transforms \
            else (shape, view)

    if next(ir.walk(case.body, ir.MeshIndex), None) is not None:
        return None   # a device's row is not one static index
    try:
        if any(positions(*inside(v), case.refs[v.ref].bits).shape != ()
               or any(isinstance(t, ir.Bitcast) for t in v.transforms)
               for v in ir.walk(case.body, ir.View)):
            return None
    except ModelError:   # an invalid program's view (out of bounds, say) denotes nothing
        return None

    def simple(view):
        index = element(*inside(view))
        step = view.transforms[:len(view.transforms) - len(view.named)]
        return ir.View(view.ref, (*step, *((ir.At(tuple(ir.Int(i) for i in index)),)
                                           if index else ())))

    return dataclasses.replace(case, body=ir.replace_nodes(case.body, ir.View, simple))


def names_twice(refs, view: ir.View) -> bool:
    """Whether ``view``, or a view on the way to it, names one element of its
    ref twice (a gather with a repeated index): discharge writes such a view
    back with one scatter, and which of the repeated updates wins is not
    specified (x.at[[0, 0]].at[0] may lose a store, or a signal)."""
    shape, bits = tuple(refs[view.ref].shape), refs[view.ref].bits
    for k, t in enumerate(view.transforms, 1):
        if k == len(view.transforms) or isinstance(t, ir.At) and any(
                isinstance(i, ir.IntArray) for i in t.indices):
            try:
                pos = positions(shape, ir.View(view.ref, view.transforms[:k]), bits)
            except ModelError:   # no single elements (a bitcast): none twice
                continue
            if np.unique(pos).size < pos.size:
                return True
    return False

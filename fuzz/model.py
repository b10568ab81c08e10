"""The reference model: what a case *means*, computed without JAX.

A semaphore array is an array of unbounded integer counts starting at 0.
``signal(view, inc)`` adds ``inc`` to every count the view denotes,
``wait(view, value)`` subtracts ``value`` (``decrement=False``: leaves the
count alone), ``read(view)`` returns the count. A view denotes the elements
NumPy would give for the same chain of transforms on the semaphore array.

One thing has no meaning: a wait whose count is below ``value`` blocks
forever on hardware (nothing else in a one-core kernel can signal). The model
says so for that program only (`Meaning.undefined`), instead of guessing what
an interpreter should do.

>>> from fuzz import ir
>>> s = ir.Semaphore("int16", (2,))
>>> at1 = ir.View(0, (ir.At((ir.Int(1),)),))
>>> evaluate(ir.Case((s,), (ir.Signal(at1, ir.Int(3)), ir.Read(at1)))).reads
(3,)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from fuzz import ir


class ModelError(ValueError):
    """The model has no meaning for this statement (it is not a valid program)."""


@dataclass(frozen=True)
class Meaning:
    """Reads in program order and the final counts of every semaphore (nested
    lists of Python ints), or why the program has no defined meaning.

    ``read_writers`` / ``state_writers`` name, for each read and each final
    count, the last signal or wait that changed that element before it (a
    statement number, or None): where to look when a path gets that value
    wrong. A wait or signal that leaves the count as it is (by 0, or a
    non-decrementing wait) cannot be where it went wrong in the model's terms."""
    reads: tuple[int, ...]
    state: tuple[list, ...]
    undefined: str | None = None
    read_writers: tuple[int | None, ...] = ()
    state_writers: tuple[list, ...] = ()


def positions(shape: tuple[int, ...], view: ir.View) -> np.ndarray:
    """The flat positions (C order) of the elements ``view`` denotes in an
    array of ``shape``, shaped like the view.

    >>> positions((2, 3), ir.View(0, (ir.At((ir.Int(1),)), ir.At((ir.Int(-1),)))))
    array(5)
    """
    arr = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    bits = ir.SEMAPHORE_BITS
    for t in view.transforms:
        match t:
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
                # A count split across (or merged from) elements of another
                # width has no meaning as a count.
                raise ModelError(f"bitcast of {bits}-bit counts to {t.dtype}")
    return np.asarray(arr)


def add(counts: np.ndarray, where: np.ndarray, amount: int) -> None:
    """Add ``amount`` to the counts at flat positions ``where`` (from
    `positions`), in place; a position named twice gets it once, as with
    NumPy's ``a[idx] += amount``."""
    counts.reshape(-1)[where.reshape(-1)] += amount


def effect(stmt: ir.Statement) -> int:
    """What ``stmt`` adds to the count it names (0 for a read, a
    non-decrementing wait, or an amount of 0).

    >>> effect(ir.Wait(ir.View(0), ir.Int(2))), effect(ir.Wait(ir.View(0), decrement=False))
    (-2, 0)
    """
    if isinstance(stmt, ir.Signal):
        return stmt.inc.value
    if isinstance(stmt, ir.Wait) and stmt.decrement:
        return -stmt.value.value
    return 0


def element(shape: tuple[int, ...], view: ir.View) -> tuple[int, ...]:
    """The one element a scalar view denotes, as a full index into ``shape``.

    >>> element((2, 2), ir.View(0, (ir.Reshape((4,)), ir.At((ir.Int(3),)))))
    (1, 1)
    """
    pos = positions(shape, view)
    if pos.shape != ():
        raise ModelError(f"view of shape {pos.shape} is not one element")
    return tuple(int(i) for i in np.unravel_index(int(pos), shape))


def evaluate(case: ir.Case) -> Meaning:
    """Run ``case`` on unbounded counts. Raises ModelError for statements no
    valid program has (non-scalar signal/wait/read, remote or cross-core
    signals)."""
    counts = [np.zeros(s.shape, dtype=object) for s in case.semaphores]  # Python ints
    writers = [np.full(s.shape, None, dtype=object) for s in case.semaphores]
    reads: list[int] = []
    read_writers: list[int | None] = []

    def meaning(undefined=None):
        return Meaning(tuple(reads), tuple(c.tolist() for c in counts), undefined,
                       tuple(read_writers), tuple(w.tolist() for w in writers))

    for n, stmt in enumerate(case.body):
        sem = case.semaphores[stmt.view.ref]
        flat = counts[stmt.view.ref].reshape(-1)
        last_writer = writers[stmt.view.ref].reshape(-1)
        pos = positions(tuple(sem.shape), stmt.view)
        if pos.shape != ():
            raise ModelError(f"statement {n}: {stmt.tag} of a view of shape {pos.shape}")
        p = int(pos)
        match stmt:
            case ir.Signal() if stmt.device_id is not None or stmt.core_index is not None:
                raise ModelError(f"statement {n}: a signal to another device or core")
            case ir.Wait() if flat[p] < stmt.value.value:
                last_writer[p] = n
                return meaning(
                    f"statement {n} waits for {stmt.value.value} on a count of "
                    f"{flat[p]}: it would block forever")
            case ir.Signal() | ir.Wait() if effect(stmt):
                add(counts[stmt.view.ref], pos, effect(stmt))
                last_writer[p] = n
            case ir.Read():
                reads.append(int(flat[p]))
                read_writers.append(last_writer[p])
    return meaning()


def canonical(case: ir.Case) -> ir.Case:
    """``case`` with every view rewritten as one static ``.at[i, j, ...]`` of
    the element it denotes: the same program by the model's semantics, through
    a different (the simplest) transform chain."""
    def simple(view):
        index = element(tuple(case.semaphores[view.ref].shape), view)
        return ir.View(view.ref, (ir.At(tuple(ir.Int(i) for i in index)),) if index else ())

    body = tuple(dataclasses.replace(s, view=simple(s.view)) for s in case.body)
    return dataclasses.replace(case, body=body)

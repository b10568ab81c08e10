"""The case IR: one fuzz case as small frozen dataclasses of plain data.

Everything else speaks this: strategies draw it, `fuzz.emit` turns it into a
live JAX program or Python source, `fuzz.serialize` into JSON. No JAX objects
live here, so a case can be stored, compared and shrunk freely.

A case declares semaphores, a kernel body (a list of statements over *views*
of them) and the paths to run it on. Dynamic (traced) integers are read at run
time from an int32 vector ``dyn``; each `read` writes the next slot of an int32
vector ``out``. Both vectors are derived from the body, never stored.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Union

import numpy as np

SCHEMA_VERSION = 1

# Semaphore kinds: pltpu.SemaphoreType members, plus the raw interpret dtype
# (an int16 ref), which the semaphore primitives also accept.
SEMAPHORE_KINDS = ("regular", "dma", "barrier", "int16")
# Refs of these dtypes are plain arrays; int32/float32 are the wrong dtypes
# invalid programs use in place of a semaphore.
ARRAY_KINDS = ("int16", "int32", "float32")
KINDS = SEMAPHORE_KINDS + ARRAY_KINDS[1:]
# Dtypes a bitcast transform may name.
BITCAST_DTYPES = ("int8", "uint8", "int16", "uint16", "float16", "bfloat16",
                  "int32", "uint32", "float32")
PATHS = ("abstract", "run_state", "pallas_call", "tpu_interpret")
# Semaphores are int16 in interpret mode, whatever their kind.
SEMAPHORE_BITS = 16


class IRError(ValueError):
    """A case that is not well formed (as data, before JAX sees it)."""


# --- integer operands ---------------------------------------------------------

@dataclass(frozen=True)
class Int:
    """An integer operand: a Python literal, or a traced value read from ``dyn``."""
    value: int
    dynamic: bool = False
    tag: ClassVar[str] = "int"


# --- indexers inside one .at[...] --------------------------------------------

@dataclass(frozen=True)
class Slice:
    """A builtin ``start:stop:step`` slice; ``None`` fields are omitted."""
    start: int | None = None
    stop: int | None = None
    step: int | None = None
    tag: ClassVar[str] = "slice"


@dataclass(frozen=True)
class Ds:
    """``pl.ds(start, size)``; ``start`` may be dynamic."""
    start: Int
    size: int
    tag: ClassVar[str] = "ds"


@dataclass(frozen=True)
class IntArray:
    """A 1-D int32 index array: a NumPy constant, or traced (read from ``dyn``)."""
    values: tuple[int, ...]
    dynamic: bool = False
    tag: ClassVar[str] = "int_array"


@dataclass(frozen=True)
class Ellipsis_:
    """``...``"""
    tag: ClassVar[str] = "ellipsis"


Index = Union[Int, Slice, Ds, IntArray, Ellipsis_]


# --- transforms of a view -----------------------------------------------------

@dataclass(frozen=True)
class At:
    """One ``.at[i0, i1, ...]``."""
    indices: tuple[Index, ...]
    tag: ClassVar[str] = "at"


@dataclass(frozen=True)
class Reshape:
    shape: tuple[int, ...]
    tag: ClassVar[str] = "reshape"


@dataclass(frozen=True)
class Bitcast:
    dtype: str
    tag: ClassVar[str] = "bitcast"


@dataclass(frozen=True)
class Transpose:
    permutation: tuple[int, ...]
    tag: ClassVar[str] = "transpose"


Transform = Union[At, Reshape, Bitcast, Transpose]


@dataclass(frozen=True)
class View:
    """Semaphore number ``ref`` seen through a chain of transforms."""
    ref: int
    transforms: tuple[Transform, ...] = ()


# --- statements ---------------------------------------------------------------

@dataclass(frozen=True)
class Signal:
    """``pl.semaphore_signal(view, inc, device_id=..., device_id_type=..., core_index=...)``."""
    view: View
    inc: Int = Int(1)
    device_id: Int | None = None
    device_id_type: str | None = None  # "mesh" | "logical" (deprecated in JAX)
    core_index: Int | None = None
    tag: ClassVar[str] = "signal"


@dataclass(frozen=True)
class Wait:
    """``pl.semaphore_wait(view, value, decrement=...)``."""
    view: View
    value: Int = Int(1)
    decrement: bool = True
    tag: ClassVar[str] = "wait"


@dataclass(frozen=True)
class Read:
    """``out[k] = pl.semaphore_read(view)``, k counting the reads before it."""
    view: View
    tag: ClassVar[str] = "read"


Statement = Union[Signal, Wait, Read]


def primitive(stmt: Statement) -> str:
    """The name of the JAX primitive a statement binds (``semaphore_signal``)."""
    return f"semaphore_{stmt.tag}"


# --- declarations and the case ------------------------------------------------

@dataclass(frozen=True)
class Semaphore:
    """A semaphore array. ``scoped`` allocates it with ``pl.run_scoped`` inside
    the kernel instead of as a ``pallas_call`` scratch operand."""
    kind: str
    shape: tuple[int, ...]
    scoped: bool = False


@dataclass(frozen=True)
class ExpectedError:
    """The clean error a user should get from an invalid case: exception type
    names (``|``-separated), a regular expression its message must match, and
    the primitive whose use is the mistake."""
    type: str
    match: str
    primitive: str = "?"


@dataclass(frozen=True)
class Case:
    semaphores: tuple[Semaphore, ...]
    body: tuple[Statement, ...]
    paths: tuple[str, ...] = PATHS
    expect: ExpectedError | None = None

    def __post_init__(self):
        check_case(self)

    @property
    def valid(self) -> bool:
        return self.expect is None

    @property
    def num_reads(self) -> int:
        return sum(isinstance(s, Read) for s in self.body)

    @property
    def dynamic_values(self) -> tuple[int, ...]:
        """Values of the dynamic operands, in the order the body uses them."""
        return tuple(v for i in walk_ints(self) if i.dynamic
                     for v in (i.values if isinstance(i, IntArray) else (i.value,)))


def walk_ints(case: Case):
    """Every `Int` and `IntArray` of the case in program order (the order
    ``dyn`` is filled)."""
    for stmt in case.body:
        yield from _view_ints(stmt.view)
        match stmt:
            case Signal():
                yield stmt.inc
                if stmt.device_id is not None:
                    yield stmt.device_id
                if stmt.core_index is not None:
                    yield stmt.core_index
            case Wait():
                yield stmt.value


def _view_ints(view: View):
    for t in view.transforms:
        if isinstance(t, At):
            for idx in t.indices:
                if isinstance(idx, (Int, IntArray)):
                    yield idx
                elif isinstance(idx, Ds):
                    yield idx.start


# --- shapes -------------------------------------------------------------------

def dtype_bits(dtype: str) -> int:
    return 16 if dtype == "bfloat16" else np.dtype(dtype).itemsize * 8


def index_key(idx: Index):
    """The NumPy index an IR indexer means (dynamic values taken as static)."""
    match idx:
        case Int():
            return idx.value
        case Slice():
            return slice(idx.start, idx.stop, idx.step)
        case Ds():
            return slice(idx.start.value, idx.start.value + idx.size)
        case IntArray():
            return np.asarray(idx.values, dtype=np.int64)
        case Ellipsis_():
            return Ellipsis
    raise IRError(f"not an indexer: {idx!r}")


def apply_transform(shape: tuple[int, ...], bits: int, t: Transform
                    ) -> tuple[tuple[int, ...], int]:
    """Shape and element width after one transform, by NumPy's rules (and, for
    bitcast, JAX's documented second-minor rule). Raises IRError when the
    transform does not apply."""
    match t:
        case At():
            probe = np.lib.stride_tricks.as_strided(
                np.zeros(1, np.int8), shape, (0,) * len(shape))
            try:
                return probe[tuple(index_key(i) for i in t.indices)].shape, bits
            except (IndexError, ValueError, TypeError) as e:
                raise IRError(f"index {t} on shape {shape}: {e}") from None
        case Reshape():
            if math.prod(t.shape) != math.prod(shape):
                raise IRError(f"cannot reshape {shape} into {t.shape}")
            return tuple(t.shape), bits
        case Transpose():
            if sorted(t.permutation) != list(range(len(shape))):
                raise IRError(f"permutation {t.permutation} for shape {shape}")
            return tuple(shape[p] for p in t.permutation), bits
        case Bitcast():
            new_bits = dtype_bits(t.dtype)
            if new_bits == bits:
                return shape, bits
            if len(shape) < 2 or (shape[-2] * bits) % new_bits:
                raise IRError(f"bitcast {shape} from {bits} to {new_bits} bits")
            return (*shape[:-2], shape[-2] * bits // new_bits, shape[-1]), new_bits
    raise IRError(f"not a transform: {t!r}")


def view_shape(case_or_sems, view: View) -> tuple[int, ...]:
    """Shape of ``view``, by NumPy semantics. Raises IRError if it has none."""
    sems = getattr(case_or_sems, "semaphores", case_or_sems)
    if not 0 <= view.ref < len(sems):
        raise IRError(f"view of semaphore {view.ref}, case has {len(sems)}")
    sem = sems[view.ref]
    shape, bits = tuple(sem.shape), SEMAPHORE_BITS
    for t in view.transforms:
        shape, bits = apply_transform(shape, bits, t)
    return shape


# --- structural checks (as data, not JAX semantics) ---------------------------

def check_case(case: Case) -> None:
    """Raise IRError unless ``case`` is well-formed data. Validity in JAX's
    sense is not checked here: that is what `expect` records."""
    if not case.semaphores:
        raise IRError("a case needs at least one semaphore")
    for s in case.semaphores:
        if s.kind not in KINDS:
            raise IRError(f"semaphore kind {s.kind!r} not in {KINDS}")
        if not all(isinstance(d, int) and d >= 0 for d in s.shape):
            raise IRError(f"semaphore shape {s.shape!r} must be non-negative ints")
    for p in case.paths:
        if p not in PATHS:
            raise IRError(f"path {p!r} not in {PATHS}")
    if not case.paths:
        raise IRError("a case needs at least one path")
    for stmt in case.body:
        if not 0 <= stmt.view.ref < len(case.semaphores):
            raise IRError(f"statement uses semaphore {stmt.view.ref}, "
                          f"case has {len(case.semaphores)}")
        for t in stmt.view.transforms:
            if isinstance(t, Bitcast) and t.dtype not in BITCAST_DTYPES:
                raise IRError(f"bitcast dtype {t.dtype!r} not in {BITCAST_DTYPES}")
        if isinstance(stmt, Signal) and stmt.device_id_type not in (None, "mesh", "logical"):
            raise IRError(f"device_id_type {stmt.device_id_type!r}")
    for i in walk_ints(case):
        values = i.values if isinstance(i, IntArray) else (i.value,)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise IRError(f"integer operand {values!r} is not an int")
        if (i.dynamic or isinstance(i, IntArray)) and not all(
                -2**31 <= v < 2**31 for v in values):
            raise IRError(f"operand {values} does not fit int32")


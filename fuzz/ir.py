"""The case IR: one fuzz case as small frozen dataclasses of plain data.

Everything else speaks this: strategies draw it, `fuzz.emit` turns it into
Python source (which the live run executes), `fuzz.serialize` into JSON. No
JAX objects live here, so a case can be stored, compared and shrunk freely.

A case declares refs (semaphore arrays and data arrays), a kernel body (a
list of statements over *views* of them) and the paths to run it on. The
statement kinds are not listed here: each op module under ``fuzz/ops/``
defines its node as a `Statement` subclass, which registers it. Dynamic
(traced) integers are read at run time from an int32 vector ``dyn``; each
semaphore read writes the next slot of an int32 vector ``out``. Both vectors
are derived from the body, never stored.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import ClassVar, Union

import numpy as np

# 2: `Case.semaphores` became `Case.refs` (data refs joined); see serialize.
# 3: a ref declares its memory space and whether its pallas_call output
# aliases its input (older files get the defaults).
# 4: a case may carry a pallas_call grid (older files have none).
# 5: a view may take a step's slice (ir.Step); a loop may slice refs (xs);
# a pipeline statement (older files have neither).
# 6: a case may run on a mesh of devices (`Case.devices`); a device
# relative to the running one (ir.MeshIndex) as an index or a target.
SCHEMA_VERSION = 6

# pltpu.SemaphoreType members.
SEMAPHORE_TYPES = ("regular", "dma", "barrier")
# Kinds a semaphore primitive takes: the types, and the raw interpret dtype
# (an int16 ref), which the semaphore primitives also accept.
SEMAPHORE_KINDS = SEMAPHORE_TYPES + ("int16",)
# Dtypes of data refs; the 64-bit ones only in a case with ``x64`` set
# (they exist only under jax.enable_x64).
DATA_DTYPES = ("bool", "int8", "int16", "int32", "uint8", "uint32",
               "float16", "bfloat16", "float32")
X64_DTYPES = ("int64", "float64")
KINDS = SEMAPHORE_TYPES + DATA_DTYPES + X64_DTYPES
# Dtypes a bitcast transform may name.
BITCAST_DTYPES = ("int8", "uint8", "int16", "uint16", "float16", "bfloat16",
                  "int32", "uint32", "float32")
# Where a data ref lives in a Pallas kernel (None: the default, VMEM); ANY
# (HBM) is left to DMA programs, since a kernel may not load from it directly.
MEMORY_SPACES = ("vmem", "smem")
# A barrier semaphore is not allocated: ``pltpu.get_barrier_semaphore()``
# hands the kernel its collective's (a ref of this memory space).
COLLECTIVE = "collective"
# The name of a case mesh's one axis, and how many devices it may have.
MESH_AXIS = "x"
MAX_DEVICES = 8
PATHS = ("abstract", "run_state", "jax_refs", "eager", "nested", "pallas_call", "mesh_kernel",
         "tpu_interpret", "tpu_interpret_eager")
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


def simpler_ints(i: Int):
    """Simpler values of an integer operand: static, then 0, 1, half."""
    if i.dynamic:
        yield Int(i.value)
    for v in dict.fromkeys((0, 1, i.value // 2 if i.value > 0 else -(-i.value // 2))):
        if abs(v) < abs(i.value):
            yield Int(v, i.dynamic)


@dataclass(frozen=True)
class Result:
    """The value statement number ``stmt`` produced (a get, a swap's old
    value): data flowing from one statement into a later one."""
    stmt: int
    tag: ClassVar[str] = "result"


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


@dataclass(frozen=True)
class Step:
    """The slice of a ref that the current step of an enclosing statement
    works on (``ref[i]`` at step ``i`` of a ``lax.scan`` taking the ref as
    ``xs``): only as ``At((Step(),))`` (`STEP`), leading each view of a ref
    that an enclosing statement `slices <Statement.slices>`. The source
    names the slice as it names the ref; the model binds the step
    (`bound`)."""
    tag: ClassVar[str] = "step"


@dataclass(frozen=True)
class MeshIndex:
    """A device relative to the one running, along the case's mesh
    (`Case.devices`): ``(jax.lax.axis_index("x") + offset) % devices``. As
    an indexer it names that row of a ref with a row per device; as a
    copy's or a signal's ``device_id``, the device it targets. The model
    binds it for each device (`bound_to`)."""
    offset: int
    tag: ClassVar[str] = "mesh_index"


Index = Union[Int, Slice, Ds, IntArray, Ellipsis_, Step, MeshIndex]


# --- transforms of a view -----------------------------------------------------

@dataclass(frozen=True)
class At:
    """One ``.at[i0, i1, ...]``."""
    indices: tuple[Index, ...]
    tag: ClassVar[str] = "at"


# How a view names its slice of a ref that an enclosing statement slices.
STEP = At((Step(),))


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
    # The API its source uses that not every release has (`Statement.needs`;
    # the other transforms: every release has them).
    needs: ClassVar[tuple[str, ...]] = ("jax._src.state.types.TransformedRef.transpose",)


Transform = Union[At, Reshape, Bitcast, Transpose]


@dataclass(frozen=True)
class View:
    """Ref number ``ref`` seen through a chain of transforms."""
    ref: int
    transforms: tuple[Transform, ...] = ()

    @property
    def named(self) -> tuple[Transform, ...]:
        """The transforms after a step's slice (`STEP`), which the source
        names by the ref's own name."""
        return self.transforms[1:] if self.transforms[:1] == (STEP,) else self.transforms


# --- statements: registered by the op modules (fuzz/ops/) -------------------

@dataclass(frozen=True)
class Statement:
    """Base of every statement node. Each op module (``fuzz/ops/<family>/``)
    defines one subclass with its ``tag`` (the JSON name), the ``primitive`` it
    binds and its ``family``; defining it registers it here, so the IR, JSON
    and walks know it without a table to edit."""
    tag: ClassVar[str]
    primitive: ClassVar[str]
    family: ClassVar[str]

    # Whether the statement gives a value a later `Result` may name.
    produces_value: ClassVar[bool] = False
    # Fields holding nested statements (control flow): a block (a tuple of
    # statements) or a tuple of blocks. Statements are numbered in pre-order
    # (`flat`): a control statement, then its blocks' statements in order.
    block_fields: ClassVar[tuple[str, ...]] = ()
    # Whether the statement writes a slot of ``out`` (a semaphore read): only
    # at the top level, where it runs exactly once.
    writes_out: ClassVar[bool] = False
    # Whether it allocates semaphores of its own (a pipeline's DMA semaphores),
    # which discharge takes only physicalized, as interpret mode makes them.
    allocates_semaphores: ClassVar[bool] = False

    def blocks(self) -> tuple[tuple[Statement, ...], ...]:
        """The nested blocks, in numbering order."""
        found = []
        for name in self.block_fields:
            value = getattr(self, name)
            found.extend(value if value and isinstance(value[0], tuple) else (value,))
        return tuple(found)

    def with_blocks(self, blocks) -> Statement:
        """The same statement with its blocks replaced (same count, in order)."""
        blocks, fields = list(blocks), {}
        for name in self.block_fields:
            value = getattr(self, name)
            if value and isinstance(value[0], tuple):
                fields[name] = tuple(blocks.pop(0) for _ in value)
            else:
                fields[name] = tuple(blocks.pop(0))
        return dataclasses.replace(self, **fields)

    def counted(self) -> tuple[View, ...]:
        """The views whose refs hold counts (semaphores) in this statement."""
        return ()

    def slices(self) -> tuple[int, ...]:
        """Refs whose blocks see one slice along the leading axis at a
        time, under the ref's own name (`Step`): a scan's ``xs``. None of
        them is one that an enclosing statement slices."""
        return ()

    def once(self, b: int) -> tuple[Statement, ...]:
        """Block ``b`` as one run of it, standalone (its step's slices bound
        to the first step's): what the statement unwraps to."""
        return self.blocks()[b]

    def check(self, case: Case, n: int) -> None:
        """Raise IRError if this statement (number ``n``) is not well-formed data."""

    def touches(self) -> tuple[View, ...]:
        """The views whose elements this statement reads or writes on the
        device that runs it (a remote copy's destination is another's)."""
        return views(self)

    def not_applicable(self, path) -> str | None:
        """Why ``path`` cannot run this statement (None: it can). ``path`` is
        the path's module (fuzz/paths/): a statement reads its ``NAME`` and
        ``CONTEXT`` ("pallas", "traced", "refs" or "eager"), never a list of
        path names of its own."""
        return None

    def needs(self) -> tuple[str, ...]:
        """The public API its source uses that not every supported JAX
        release has, as `fuzz.compat` names features ("jax.ref.get")."""
        return ()

    def refused_under(self, transform: str, path) -> str | None:
        """Why JAX, as it documents, refuses ``transform`` ("vmap", "grad",
        "partial-discharge", "mesh": a shard_map around it) of ``path``'s
        program with this statement in it (None: it does not); ``path`` as
        in `not_applicable`."""
        return None

    def value_type(self, case_or_refs) -> tuple[tuple[int, ...], str]:
        """(shape, dtype) of the value it produces: by default its view's (a get)."""
        return view_shape(case_or_refs, self.view), view_dtype(case_or_refs, self.view)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "tag" in cls.__dict__:
            if _STATEMENTS.get(cls.tag, cls) is not cls:
                raise IRError(f"two statement kinds tagged {cls.tag!r}")
            _STATEMENTS[cls.tag] = cls


_STATEMENTS: dict[str, type[Statement]] = {}


def statement_types() -> tuple[type[Statement], ...]:
    """Every statement kind registered so far: every one, once `fuzz.ops`
    (which registers them all) is imported, which is its caller's to do."""
    return tuple(_STATEMENTS.values())


def primitive(stmt: Statement) -> str:
    """The name of the JAX primitive a statement binds (``semaphore_signal``)."""
    return stmt.primitive


# --- declarations and the case ------------------------------------------------

@dataclass(frozen=True)
class Ref:
    """A ref the kernel works on: a semaphore array (``kind`` a semaphore type)
    or a data array (``kind`` its dtype; an int16 array also stands in for a
    semaphore, as interpret mode does). ``scoped`` allocates it with
    ``pl.run_scoped`` inside the kernel instead of as a ``pallas_call`` operand.
    A data ref also says where it lives (``memory_space``, one of
    `MEMORY_SPACES`, None for the default) and, as a ``pallas_call`` operand,
    whether its output aliases its input (``input_output_aliases``)."""
    kind: str
    shape: tuple[int, ...]
    scoped: bool = False
    memory_space: str | None = None
    aliased: bool = False

    @property
    def is_semaphore(self) -> bool:
        return self.kind in SEMAPHORE_TYPES

    @property
    def collective(self) -> bool:
        """Whether it is the kernel's barrier semaphore (`COLLECTIVE`)."""
        return self.memory_space == COLLECTIVE

    @property
    def bits(self) -> int:
        """Element width as the discharged program stores it."""
        return SEMAPHORE_BITS if self.is_semaphore else dtype_bits(self.kind)


@dataclass(frozen=True)
class Grid:
    """The grid a ``pallas_call`` runs the kernel over: ``shape`` (1 to 3
    axes). Each unscoped data ref is an operand holding one block (of the
    ref's shape) per grid point; each grid point, visited in row-major order,
    works on its own block. Which one is the point's row-major number with
    its axes taken in ``order`` (a permutation), counted from the end when
    ``reverse``: the index maps compute it from the program ids, or, with
    ``prefetch``, read it from a ``PrefetchScalarGridSpec`` scalar-prefetch
    operand (``dyn``, extended by the table `blocks`). Semaphores and other
    scratch live across the grid; scoped refs are allocated anew at each
    point.

    >>> Grid((2, 3), order=(1, 0)).blocks()
    (0, 2, 4, 1, 3, 5)
    """
    shape: tuple[int, ...]
    order: tuple[int, ...]
    reverse: bool = False
    prefetch: bool = False

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def stacked(self, ref: Ref) -> Ref:
        """``ref`` as the operand that holds its blocks."""
        return dataclasses.replace(ref, shape=(self.size, *ref.shape))

    def blocks(self) -> tuple[int, ...]:
        """The block each grid point works on, by visit number."""
        permuted = tuple(self.shape[a] for a in self.order)
        return tuple(self.size - 1 - b if self.reverse else b
                     for b in (int(np.ravel_multi_index(tuple(ids[a] for a in self.order), permuted))
                               for ids in np.ndindex(*self.shape)))


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
    refs: tuple[Ref, ...]
    body: tuple[Statement, ...]
    paths: tuple[str, ...] = PATHS
    expect: ExpectedError | None = None
    x64: bool = False   # run under jax.enable_x64 (64-bit dtypes exist)
    grid: Grid | None = None   # pallas_call's grid (None: one kernel run)
    # A mesh of this many devices along one axis (`MESH_AXIS`): the
    # pallas_call runs on each under shard_map, each device on its own
    # block of every operand (None: no mesh, one device, no shard_map).
    devices: int | None = None

    def __post_init__(self):
        check_case(self)

    @property
    def valid(self) -> bool:
        return self.expect is None

    @functools.cached_property
    def statements(self) -> tuple[Statement, ...]:
        """Every statement, nested ones included, by number (`flat`): read
        for each trigger and each statement a failure is matched against,
        so computed once (a case is frozen)."""
        return flat(self.body)

    @property
    def num_reads(self) -> int:
        return sum(s.writes_out for s in self.statements)

    @property
    def dynamic_values(self) -> tuple[int, ...]:
        """Values of the dynamic operands, in the order the body uses them."""
        return tuple(v for i in walk_ints(self) if i.dynamic
                     for v in (i.values if isinstance(i, IntArray) else (i.value,)))


def walk(node, kind):
    """Every node of type ``kind`` inside ``node`` (a dataclass or tuple), in
    field order: the walks follow the declared fields, never a list of them.

    >>> [i.value for i in walk(View(0, (At((Int(1), Ds(Int(2), 1))),)), Int)]
    [1, 2]
    """
    if isinstance(node, kind):
        yield node
    elif isinstance(node, tuple):
        for x in node:
            yield from walk(x, kind)
    elif dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            yield from walk(getattr(node, f.name), kind)


def replace_nodes(node, kind, fn):
    """``node`` with every node of type ``kind`` inside it replaced by
    ``fn(node)`` (rebuilt through dataclass fields and tuples)."""
    if isinstance(node, kind):
        return fn(node)
    if isinstance(node, tuple):
        return tuple(replace_nodes(x, kind, fn) for x in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return dataclasses.replace(node, **{
            f.name: replace_nodes(getattr(node, f.name), kind, fn)
            for f in dataclasses.fields(node) if f.init})
    return node


def flat(body: tuple) -> tuple[Statement, ...]:
    """The statements of ``body`` in pre-order: statement number ``n`` is
    ``flat(body)[n]``. A `Result` names a statement by this number."""
    out = []
    for stmt in body:
        out.append(stmt)
        for block in stmt.blocks():
            out.extend(flat(block))
    return tuple(out)


def size(stmt: Statement) -> int:
    """How many numbers ``stmt`` takes: itself and its nested statements."""
    return 1 + sum(len(flat(b)) for b in stmt.blocks())


def top_level(body: tuple):
    """(number, statement) of ``body``'s top-level statements."""
    n = 0
    for stmt in body:
        yield n, stmt
        n += size(stmt)


def enclosing(body: tuple, n: int) -> list[int]:
    """The numbers of the control statements statement ``n`` is nested in,
    innermost first."""
    found, k = [], 0
    for stmt in body:
        if k < n < k + size(stmt):
            first = k + 1
            for b in stmt.blocks():
                if first <= n < first + len(flat(b)):
                    found = [first + m for m in enclosing(b, n - first)] + [k]
                first += len(flat(b))
        k += size(stmt)
    return found


def _replaced(body: tuple, n: int, new: tuple, start: int = 0) -> tuple:
    """``body`` with statement number ``n`` replaced by the statements ``new``
    (Results untouched)."""
    out, k = [], start
    for stmt in body:
        if k == n:
            out.extend(new)
        elif k < n < k + size(stmt):
            blocks, first = [], k + 1
            for b in stmt.blocks():
                blocks.append(_replaced(b, n, new, first))
                first += len(flat(b))
            out.append(stmt.with_blocks(blocks))
        else:
            out.append(stmt)
        k += size(stmt)
    return tuple(out)


def _renumbered(body: tuple, mapping: dict[int, int]) -> tuple | None:
    """``body`` with every `Result` renumbered by ``mapping``; None when one
    names a statement the mapping drops."""
    if any(r.stmt not in mapping for r in walk(body, Result)):
        return None
    return replace_nodes(body, Result, lambda r: Result(mapping[r.stmt]))


def without_statement(body: tuple, n: int) -> tuple | None:
    """``body`` without statement number ``n`` (and what it nests), later
    `Result`s renumbered; None when a remaining statement uses a value it
    removes."""
    gone = size(flat(body)[n])
    mapping = {k: k if k < n else k - gone for k in range(len(flat(body)))
               if not n <= k < n + gone}
    return _renumbered(_replaced(body, n, ()), mapping)


def without_statements(case: Case, numbers) -> Case | None:
    """``case`` without statements ``numbers`` (and what they nest); None
    where a remaining statement uses a value they give, or nothing
    well-formed is left."""
    body = case.body
    for n in sorted(set(numbers), reverse=True):   # (later first: earlier ones stay put)
        if (body := without_statement(body, n)) is None:
            return None
    try:
        return dataclasses.replace(case, body=body) if body else None
    except (IRError, ValueError, TypeError, IndexError):
        return None


def unwrapped(body: tuple, n: int, b: int) -> tuple | None:
    """``body`` with control statement number ``n`` replaced by the statements
    of its block ``b`` (a loop by its body run once, a cond by one branch);
    None when a remaining statement uses a value it removes."""
    stmt = flat(body)[n]
    first = n + 1 + sum(len(flat(x)) for x in stmt.blocks()[:b])
    kept = len(flat(stmt.blocks()[b]))
    gone = size(stmt)
    mapping = {k: k for k in range(n)}
    mapping.update({first + j: n + j for j in range(kept)})
    mapping.update({k: k - gone + kept for k in range(n + gone, len(flat(body)))})
    return _renumbered(_replaced(body, n, stmt.once(b)), mapping)


def spliced(body: tuple, n: int, new: tuple, *, after: bool = False) -> tuple:
    """``body`` with the statements ``new`` (which nest none) put before
    statement number ``n`` (or after it and what it nests), later `Result`s
    renumbered."""
    stmt = flat(body)[n]
    at = n + size(stmt) if after else n
    mapping = {k: k if k < at else k + len(new) for k in range(len(flat(body)))}
    return _renumbered(_replaced(body, n, (stmt, *new) if after else (*new, stmt)), mapping)


def with_statement(body: tuple, i: int, stmt: Statement) -> tuple:
    """``body`` with ``stmt`` inserted as its top-level statement ``i``,
    later `Result`s renumbered."""
    at, grow = len(flat(body[:i])), size(stmt)
    return (*body[:i], stmt, *replace_nodes(
        body[i:], Result, lambda r: Result(r.stmt + grow) if r.stmt >= at else r))


def replaced_statement(body: tuple, n: int, stmt: Statement) -> tuple:
    """``body`` with statement number ``n`` replaced by ``stmt``, which nests
    as many statements (a simpler variant of the same shape)."""
    return _replaced(body, n, (stmt,))


def walk_ints(case: Case):
    """Every `Int` and `IntArray` of the body in program order (the order
    ``dyn`` is filled)."""
    yield from walk(case.body, (Int, IntArray))


def own(stmt: Statement, kind) -> tuple:
    """Nodes of type ``kind`` in ``stmt``'s own fields (not in its blocks)."""
    return tuple(x for f in dataclasses.fields(stmt) if f.name not in stmt.block_fields
                 for x in walk(getattr(stmt, f.name), kind))


def views(stmt: Statement) -> tuple[View, ...]:
    """The views a statement names (its refs, through their transforms); a
    control statement's nested statements name their own."""
    return own(stmt, View)


def bound(block: tuple, refs, index: int) -> tuple:
    """``block`` as one step runs it: the slice of each of ``refs`` that a
    statement around it slices (the `STEP` leading each view of them)
    bound to ``index``, in the indexer that follows if there is one
    (``x.at[i].at[j]`` is ``x.at[i, j]``, which ops that take one indexer take)."""
    def bind(view):
        if view.ref not in refs or view.transforms[:1] != (STEP,):
            return view
        rest = view.transforms[1:]
        if rest and isinstance(rest[0], At):
            return dataclasses.replace(view, transforms=(
                At((Int(index), *rest[0].indices)), *rest[1:]))
        return dataclasses.replace(view, transforms=(At((Int(index),)), *rest))
    return replace_nodes(block, View, bind)


def stepped(block: tuple, refs) -> tuple:
    """``block``, drawn over ``refs``' slices (`sliced_refs`), naming them
    through a step (`STEP` leading each view of them)."""
    return replace_nodes(block, View, lambda v: dataclasses.replace(
        v, transforms=(STEP, *v.transforms)) if v.ref in refs else v)


def sliced_refs(refs: tuple[Ref, ...], which) -> tuple[Ref, ...]:
    """``refs`` with each of ``which`` replaced by one slice along its
    leading axis: what a block that slices them sees."""
    return tuple(dataclasses.replace(r, shape=r.shape[1:]) if i in which else r
                 for i, r in enumerate(refs))


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
        case Step():
            raise IRError("a step's slice is bound by the statement that slices (ir.bound)")
        case MeshIndex():
            raise IRError("a device's index is bound by the device that runs (ir.bound_to)")
    raise IRError(f"not an indexer: {idx!r}")


def bound_to(node, device: int, devices: int):
    """``node`` (a view, a statement) as device ``device`` of ``devices``
    runs it: each `MeshIndex` the static index it names there."""
    return replace_nodes(node, MeshIndex, lambda m: Int((device + m.offset) % devices))


def apply_transform(shape: tuple[int, ...], bits: int, t: Transform
                    ) -> tuple[tuple[int, ...], int]:
    """Shape and element width after one transform, by NumPy's rules (and, for
    bitcast, JAX's documented second-minor rule). Raises IRError when the
    transform does not apply."""
    match t:
        case At() if t == STEP:
            if not shape:
                raise IRError("a step's slice of a 0-D ref")
            return shape[1:], bits
        case At():
            probe = np.lib.stride_tricks.as_strided(
                np.zeros(1, np.int8), shape, (0,) * len(shape))
            try:   # a device's index is one int, whichever device runs
                return probe[tuple(0 if isinstance(i, MeshIndex) else index_key(i)
                                   for i in t.indices)].shape, bits
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


def view_shape(case_or_refs, view: View) -> tuple[int, ...]:
    """Shape of ``view``, by NumPy semantics. Raises IRError if it has none."""
    refs = getattr(case_or_refs, "refs", case_or_refs)
    if not 0 <= view.ref < len(refs):
        raise IRError(f"view of ref {view.ref}, case has {len(refs)}")
    ref = refs[view.ref]
    shape, bits = tuple(ref.shape), ref.bits
    for t in view.transforms:
        shape, bits = apply_transform(shape, bits, t)
    return shape


def view_dtype(case_or_refs, view: View) -> str:
    """The dtype ``view`` has: its ref's, or the last bitcast's."""
    refs = getattr(case_or_refs, "refs", case_or_refs)
    kind = refs[view.ref].kind
    for t in view.transforms:
        if isinstance(t, Bitcast):
            kind = t.dtype
    return kind


# --- structural checks (as data, not JAX semantics) ---------------------------

def check_case(case: Case) -> None:
    """Raise IRError unless ``case`` is well-formed data. Validity in JAX's
    sense is not checked here: that is what `expect` records."""
    if not case.refs:
        raise IRError("a case needs at least one ref")
    for r in case.refs:
        if r.kind not in KINDS:
            raise IRError(f"ref kind {r.kind!r} not in {KINDS}")
        if r.kind in X64_DTYPES and not case.x64:
            raise IRError(f"ref kind {r.kind!r} needs a case with x64 set")
        if not all(isinstance(d, int) and d >= 0 for d in r.shape):
            raise IRError(f"ref shape {r.shape!r} must be non-negative ints")
        if r.collective and not (r.kind == "barrier" and r.shape == () and not r.scoped):
            raise IRError("a collective ref is the ()-shaped barrier semaphore")
        if r.memory_space is not None and not r.collective and (
                r.is_semaphore or r.memory_space not in MEMORY_SPACES):
            raise IRError(f"memory space {r.memory_space!r}: a data ref's is one of "
                          f"{MEMORY_SPACES} (or none)")
        if r.aliased and (r.is_semaphore or r.scoped):
            raise IRError("only an operand data ref (not a semaphore, not scoped) is aliased")
    for p in case.paths:
        if p not in PATHS:
            raise IRError(f"path {p!r} not in {PATHS}")
    if not case.paths:
        raise IRError("a case needs at least one path")
    if (g := case.grid) is not None and not (
            1 <= len(g.shape) <= 3 and all(isinstance(d, int) and d >= 1 for d in g.shape)
            and sorted(g.order) == list(range(len(g.shape)))):
        raise IRError(f"grid {g.shape!r} (order {g.order!r}): 1 to 3 axes of positive "
                      "sizes, and an order that permutes them")
    if case.devices is not None and not (
            isinstance(case.devices, int) and 1 <= case.devices <= MAX_DEVICES):
        raise IRError(f"devices {case.devices!r}: a mesh has 1 to {MAX_DEVICES}")
    if case.devices is not None and case.grid is not None:
        raise IRError("a case runs over a grid or on a mesh, not both")
    if case.devices is None and next(walk(case.body, MeshIndex), None) is not None:
        raise IRError("a device's index (ir.MeshIndex) needs a case with a mesh")
    _check_block(case, case.body, 0, frozenset(), {})
    for i in walk_ints(case):
        values = i.values if isinstance(i, IntArray) else (i.value,)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            raise IRError(f"integer operand {values!r} is not an int")
        if (i.dynamic or isinstance(i, IntArray)) and not all(
                -2**31 <= v < 2**31 for v in values):
            raise IRError(f"operand {values} does not fit int32")


def _check_mesh_indices(case: Case, view: View, n: int) -> None:
    """A device's index (`MeshIndex`) names a row of an axis with a row
    for every device of the mesh, past no ``...``."""
    shape, bits = tuple(case.refs[view.ref].shape), case.refs[view.ref].bits
    for t in view.transforms:
        for j, i in enumerate(t.indices if isinstance(t, At) else ()):
            if isinstance(i, MeshIndex) and (
                    any(isinstance(x, Ellipsis_) for x in t.indices[:j])
                    or j >= len(shape) or shape[j] < (case.devices or 0)):
                raise IRError(f"statement {n}: a device's index into axis {j} of shape "
                              f"{shape}, on a mesh of {case.devices}")
        try:
            shape, bits = apply_transform(shape, bits, t)
        except IRError:
            return   # the view's own mistake, its op's to name


def _check_block(case: Case, block: tuple, start: int, visible: frozenset[int],
                 sliced: dict[int, int]) -> None:
    """Check the statements of ``block``, numbered from ``start``: a `Result`
    names an earlier statement with a value in the same block or an
    enclosing one (a nested block's values end with it); a view of a ref
    that an enclosing statement slices (``sliced[ref]``, 1) starts with a
    `STEP`, and has no other `Step`; no ref is sliced twice over."""
    n = start
    for stmt in block:
        if not isinstance(stmt, Statement):
            raise IRError(f"statement {n}: {stmt!r:.60} is not a statement")
        for view in views(stmt):
            if not 0 <= view.ref < len(case.refs):
                raise IRError(f"statement {n} uses ref {view.ref}, case has {len(case.refs)}")
            depth = sliced.get(view.ref, 0)
            if view.transforms[:depth] != (STEP,) * depth or any(
                    isinstance(i, Step) for t in view.transforms[depth:] if isinstance(t, At)
                    for i in t.indices):
                raise IRError(f"statement {n}: its view of ref {view.ref} takes the slice "
                              f"of {depth} enclosing steps (ir.STEP), first and only there")
            for t in view.transforms:
                if isinstance(t, Bitcast) and t.dtype not in BITCAST_DTYPES:
                    raise IRError(f"bitcast dtype {t.dtype!r} not in {BITCAST_DTYPES}")
            _check_mesh_indices(case, view, n)
        for r in own(stmt, Result):
            if r.stmt not in visible:
                raise IRError(f"statement {n} uses the value of statement {r.stmt}, "
                              "which is not an earlier statement with a value in its scope")
        if stmt.writes_out and start:
            raise IRError(f"statement {n}: a {stmt.tag} writes an out slot, so it runs "
                          "only at the top level")
        if twice := set(stmt.slices()) & set(sliced):
            raise IRError(f"statement {n} slices ref {min(twice)}, which a statement "
                          "around it slices already")
        stmt.check(case, n)
        inner = {**sliced, **dict.fromkeys(stmt.slices(), 1)}
        first = n + 1
        for b in stmt.blocks():
            _check_block(case, b, first, visible, inner)
            first += len(flat(b))
        if stmt.produces_value:
            visible |= {n}
        n += size(stmt)

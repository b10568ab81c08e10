"""A case's kernel as Python source, and the live kernel made from it.

`kernel_source` writes the kernel; `live_kernel` compiles and executes that
same text, so the program that ran and the reproducer's program are one and
the same. Each statement writes its own line (its op's ``source``); this
module only writes the frame around them and the operands they share.

The kernel's signature is ``kernel(dyn, out, *refs, *exits)``: ``dyn`` holds
the dynamic operands, ``out`` receives the semaphore reads, ``refs`` are the
non-scoped refs in declaration order; scoped ones are allocated inside with
``pl.run_scoped``. A scoped data ref starts from the model's initial pattern
(scratch has no defined contents until written) and is copied into its exit
ref ``e<i>`` as its scope ends, so its final contents can be compared.
"""
from __future__ import annotations

import collections
import itertools
import math

import numpy as np

from fuzz import compat, ir, model

# Imports a kernel's source may use.
IMPORTS = """\
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as plgpu
"""
# Live kernels are compiled under a file name of this prefix; `statement_at`
# maps a line of one back to its statement (fuzz/blame.py).
FILENAME = "<discharge-fuzz kernel {}>"
# Mesh-form device ids as a dict ({"x": i}); before, as coordinates ((i,)).
MESH_DICT = "jax._src.pallas.mosaic.interpret.utils.device_coords_to_logical_id"
_LINES: collections.OrderedDict[str, dict[int, int]] = collections.OrderedDict()
_serial = itertools.count()


def allocation_source(ref: ir.Ref) -> str:
    """The Pallas allocation (scratch shape) that declares ``ref``."""
    shape = repr(tuple(int(d) for d in ref.shape))
    if ref.is_semaphore:
        return f"pltpu.SemaphoreType.{ref.kind.upper()}({shape})"
    return f"{memory_space_source(ref)}({shape}, {dtype_source(ref.kind)})"


def memory_space_source(ref: ir.Ref) -> str:
    return f"pltpu.{(ref.memory_space or 'vmem').upper()}"


def pattern_source(ref: ir.Ref, i: int = 0) -> str:
    """`fuzz.model.pattern` for data ref ``ref``, number ``i``, computed with
    ``lax.iota`` (a NumPy constant inside a kernel would be a captured
    constant, which pallas_call refuses)."""
    shape = tuple(int(d) for d in ref.shape)
    iota = f"jax.lax.iota(jnp.int32, {math.prod(shape)}).reshape({shape!r})"
    pattern = f"({iota} + {int(i)}) % 7 + 1" if i else f"{iota} % 7 + 1"
    if ref.kind == "bool":
        return f"({pattern}) % 2 == 1"
    return f"({pattern}).astype({dtype_source(ref.kind)})"


# The most elements an argument shows as a literal (more: the iota pattern,
# which stays one short line).
LITERAL_ELEMENTS = 8


def value_source(ref: ir.Ref, i: int = 0) -> str:
    """`pattern_source`'s values as an argument outside a kernel passes
    them: a literal a reader sees at once (``jnp.asarray([2.0, 3.0],
    jnp.float32)``), unless the ref is large."""
    values = model.pattern(ref, i)
    if values.size > LITERAL_ELEMENTS:
        return pattern_source(ref, i)
    if values.size == 0:   # (a nested list would lose the shape: [] for (0, 2))
        return f"jnp.zeros({tuple(int(d) for d in ref.shape)!r}, {dtype_source(ref.kind)})"
    plain = values.tolist() if values.dtype.kind in "biu" else values.astype(np.float64).tolist()
    return f"jnp.asarray({plain!r}, {dtype_source(ref.kind)})"


def exits(case: ir.Case) -> list[int]:
    """Scoped data refs: the kernel copies each into a ref it is passed."""
    return [i for i, r in enumerate(case.refs) if r.scoped and i in model.data_refs(case)]


def dtype_source(kind: str) -> str:
    return "jnp.bool_" if kind == "bool" else f"jnp.{kind}"


class Source:
    """The emitter the ops write through: names of refs and operands."""

    def __init__(self, case: ir.Case):
        self.case = case
        self.n = 0   # the number of the statement being written
        self._slots = itertools.count()
        self._reads = itertools.count()

    def block(self, body: tuple, start: int) -> list[tuple[str, int]]:
        """The lines of the statements of ``body`` (numbered from ``start``),
        each with the number of the statement it belongs to."""
        out, n = [], start
        for stmt in body:
            self.n = n
            out += stmt.lines(self, n)
            n += ir.size(stmt)
        return out

    def read_slot(self) -> int:
        """The ``out`` slot of the next semaphore read."""
        return next(self._reads)

    def dtype(self, kind: str) -> str:
        """``kind`` as the source names its dtype (`dtype_source`: ``jnp.int8``)."""
        return dtype_source(kind)

    def operand(self, i: ir.Int) -> str:
        return f"dyn[{next(self._slots)}]" if i.dynamic else repr(int(i.value))

    def index(self, idx: ir.Index) -> str:
        match idx:
            case ir.Int():
                return self.operand(idx)
            case ir.Slice():
                parts = ["" if x is None else repr(int(x)) for x in (idx.start, idx.stop, idx.step)]
                return ":".join(parts[:2]) + (f":{parts[2]}" if idx.step is not None else "")
            case ir.Ds():
                return f"pl.ds({self.operand(idx.start)}, {int(idx.size)})"
            case ir.IntArray() if idx.dynamic:
                first = next(self._slots)
                for _ in idx.values[1:]:
                    next(self._slots)
                return f"dyn[pl.ds({first}, {len(idx.values)})]"
            case ir.IntArray():
                return f"np.array({[int(v) for v in idx.values]!r}, dtype=np.int32)"
            case ir.Ellipsis_():
                return "..."
            case ir.MeshIndex():
                return self.mesh_index(idx)
        raise ir.IRError(f"not an indexer: {idx!r}")

    def mesh_index(self, m: ir.MeshIndex) -> str:
        """The index of a device relative to this one, along the mesh."""
        me = f"jax.lax.axis_index({ir.MESH_AXIS!r})"
        return f"({me} + {m.offset}) % {self.case.devices}" if m.offset else me

    def device(self, d: ir.Int | ir.MeshIndex) -> str:
        """A ``device_id``: an operand, or a device of the mesh by its axis."""
        if isinstance(d, ir.MeshIndex):
            if not compat.has(MESH_DICT):   # (the same device: coordinates along the one axis)
                return f"({self.mesh_index(d)},)"
            return f"{{{ir.MESH_AXIS!r}: {self.mesh_index(d)}}}"
        return self.operand(d)

    def result(self, r: ir.Result) -> str:
        """The variable holding statement ``r.stmt``'s value."""
        return f"v{int(r.stmt)}"

    def split(self, v: ir.View) -> tuple[str, ir.At | None]:
        """``v`` as (the ref before its last indexer, that indexer) for
        ``ref[idx]`` syntax (None: the view does not end in one)."""
        chain = v.named
        if chain and isinstance(chain[-1], ir.At):
            return self.view(v, chain[:-1]), chain[-1]
        return self.view(v), None

    def subscript(self, at: ir.At | None) -> str:
        """What goes between the brackets of ``ref[...]``."""
        return "..." if at is None else self.indices(at)

    def indexer(self, at: ir.At | None) -> str:
        """The same indexer as one argument (``jax.ref.get(ref, idx)``)."""
        if at is None:
            return "..."
        parts = [self._slice_call(i) if isinstance(i, ir.Slice) else self.index(i)
                 for i in at.indices]
        return parts[0] if len(parts) == 1 else f"({', '.join(parts)})"

    @staticmethod
    def _slice_call(s: ir.Slice) -> str:
        return f"slice({s.start!r}, {s.stop!r}, {s.step!r})"

    def indices(self, at: ir.At) -> str:
        return ", ".join(self.index(i) for i in at.indices) if at.indices else "()"

    def view(self, v: ir.View, transforms=None) -> str:
        x = f"r{int(v.ref)}"
        for t in v.named if transforms is None else transforms:
            match t:
                case ir.At():
                    x = f"{x}.at[{self.indices(t)}]"
                case ir.Reshape():
                    x = f"{x}.reshape({tuple(int(d) for d in t.shape)!r})"
                case ir.Bitcast():
                    x = f"{x}.bitcast(jnp.{t.dtype})"
                case ir.Transpose():
                    x = f"{x}.transpose({tuple(int(p) for p in t.permutation)!r})"
        return x


def kernel_lines(case: ir.Case) -> tuple[list[str], dict[int, int]]:
    """The kernel's source lines, and which statement each line (1-based) is."""
    unscoped = [f"r{i}" for i, r in enumerate(case.refs) if not r.scoped and not r.collective]
    scoped = [i for i, r in enumerate(case.refs) if r.scoped]
    copied = exits(case)
    lines = [f"def kernel({', '.join(['dyn', 'out', *unscoped, *(f'e{i}' for i in copied)])}):"]
    lines += [f"    r{i} = pltpu.get_barrier_semaphore()"
              for i, r in enumerate(case.refs) if r.collective]
    indent = "    "
    if scoped:
        lines.append(f"    def body({', '.join(f'r{i}' for i in scoped)}):")
        indent = "        "
        lines += [f"{indent}r{i}[...] = {pattern_source(case.refs[i], i)}" for i in copied]
    e, where = Source(case), {}
    for line, n in e.block(case.body, 0):
        lines.append(indent + line)
        where[len(lines)] = n
    if not case.body:
        lines.append(indent + "pass")
    lines += [f"{indent}e{i}[...] = r{i}[...]" for i in copied]
    if scoped:
        allocs = ", ".join(allocation_source(case.refs[i]) for i in scoped)
        lines.append(f"    pl.run_scoped(body, {allocs})")
    return lines, where


def kernel_source(case: ir.Case) -> str:
    return "\n".join(kernel_lines(case)[0]) + "\n"


_IMPORTED: dict = {}


def _namespace() -> dict:
    if not _IMPORTED:
        exec(IMPORTS, _IMPORTED)  # noqa: S102 - fixed imports
    return dict(_IMPORTED)


def execute(source: str, where: dict[int, int], name: str = "kernel") -> dict:
    """Compile and run ``source`` (a kernel, or a whole program around one)
    under a file name of its own, remembering which statement each line
    (``where``: line -> statement) is; returns its namespace."""
    filename = FILENAME.format(f"{name} {next(_serial)}")
    _LINES[filename] = where
    while len(_LINES) > 256:   # blame needs recent kernels only
        _LINES.popitem(last=False)
    namespace = _namespace()
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - rendered from IR
    return namespace


def live_kernel(case: ir.Case):
    """The kernel as a Python function of refs ``(dyn, out, *refs)``: the text
    of `kernel_source`, compiled and executed."""
    lines, where = kernel_lines(case)
    return execute("\n".join(lines) + "\n", where)["kernel"]


def begin_case() -> None:
    """Forget earlier cases' kernels, so blame sees this case's only: JAX
    keeps what it traced (0.7 to 0.9: a jnp function's inner jaxpr), so an
    equation of this case may carry the traceback of an earlier kernel,
    whose line is another statement there (or none here: an IndexError)."""
    _LINES.clear()


def statement_at(filename: str, line: int) -> int | None:
    """The statement that line ``line`` of a live kernel's source is."""
    where = _LINES.get(filename)
    return None if where is None else where.get(line)

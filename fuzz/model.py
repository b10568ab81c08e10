"""The reference model: what a case *means*, computed without JAX.

Memory holds every ref: a semaphore's elements are exact integer counts
starting at 0; a data ref's are values of its dtype, starting from a fixed
pattern (`initial`), as NumPy holds them. Each statement kind gives its own
meaning (its node's ``run``, in ``fuzz/ops/``); this module only holds the
memory, the views and the loop. A view denotes the elements NumPy would give
for the same chain of transforms on the ref's array (`fuzz.elements`).

Two things have no meaning: a wait whose count is below ``value`` blocks
forever on hardware (nothing else in a one-core kernel can signal), and a
count past int32 is kept by no hardware. The model says so for that program
only (`Meaning.undefined`), instead of guessing what an interpreter should
do.

>>> from fuzz import ir
>>> from fuzz.ops.semaphore import Read, Signal
>>> s = ir.Ref("int16", (2,))
>>> at1 = ir.View(0, (ir.At((ir.Int(1),)),))
>>> evaluate(ir.Case((s,), (Signal(at1, ir.Int(3)), Read(at1)))).reads
(3,)
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from fuzz import ir
from fuzz.elements import ModelError, dtype, positions
from fuzz.ops.control import When


@dataclass(frozen=True)
class Meaning:
    """Semaphore reads in program order and the final contents of every ref
    (nested lists: Python ints for counts, the dtype's values for data), or
    why the program has no defined meaning.

    ``read_writers`` / ``state_writers`` name, for each read and each final
    element, the last statement that changed that element before it (a
    statement number, or None): where to look when a path gets that value
    wrong. A wait or signal that leaves the count as it is (by 0, or a
    non-decrementing wait) cannot be where it went wrong in the model's terms."""
    reads: tuple[int, ...]
    state: tuple[list, ...]
    undefined: str | None = None
    read_writers: tuple[int | None, ...] = ()
    state_writers: tuple[list, ...] = ()
    # Elements no path need agree on, as (ref, flat position) pairs: what
    # a copy still in flight as the kernel ends writes and counts. JAX
    # documents such a kernel as one that crashes for its non-zero DMA
    # semaphore (docs/pallas/tpu/distributed.md, "Failure modes"), so the
    # count must be reported left over at exit.
    unknown: frozenset = frozenset()
    # Reads no path need agree on, by number: a DMA semaphore read while a
    # copy in flight moves its count. On hardware that read races with the
    # copy, and JAX's docs say the count a DMA adds may not be exact
    # (docs/pallas/tpu/distributed.md, "DMA Semaphores").
    unknown_reads: frozenset = frozenset()
    # On a mesh, whether its only race is a copy landing where another
    # device's kernel start wrote (``undefined`` says so): a path that runs
    # the devices in lockstep, a remote start a collective of all of them
    # (pallas_call's ``LOCKSTEP``), gives it the meaning computed here.
    lockstep: bool = False

    @property
    def verdict(self) -> str:
        """The model's verdict on the program: "defined", "deadlock" (a wait
        blocks forever), "racy" (a copy in flight races with a statement or
        another copy), "unwaited" (it ends with a copy in flight: defined
        but for what the copy writes and counts, `unknown`), "overflow" (a
        count leaves the range every interpreter keeps) or "unspecified"
        (JAX does not say: two stores to one element)."""
        why = self.undefined
        if why is None:
            return "unwaited" if self.unknown else "defined"
        if "block forever" in why or "blocks forever" in why:
            return "deadlock"
        return next((v for v in ("racy", "unwaited", "overflow") if why.startswith(v + ":")),
                    "unspecified")


def add(counts: np.ndarray, where: np.ndarray, amount: int) -> None:
    """Add ``amount`` to the counts at flat positions ``where`` (from
    `positions`), in place; a position named twice gets it once, as with
    NumPy's ``a[idx] += amount``."""
    counts.reshape(-1)[where.reshape(-1)] += amount


def effect(stmt: ir.Statement) -> int:
    """What ``stmt`` adds to the count it names (0 for statements that do not
    move a count, or move it by 0); each op says (its ``effect``).

    >>> from fuzz.ops.semaphore import Wait
    >>> effect(Wait(ir.View(0), ir.Int(2))), effect(Wait(ir.View(0), decrement=False))
    (-2, 0)
    """
    return stmt.effect()


def counts_refs(case: ir.Case) -> set[int]:
    """Refs that some statement counts on (a semaphore's): they hold counts from 0."""
    return {v.ref for s in case.statements for v in s.counted()}


def data_refs(case: ir.Case) -> set[int]:
    """Refs only data statements use (or a statement slices): they hold
    values from `initial`'s pattern (a ref no statement uses holds zeros,
    like a counts ref)."""
    return {r for s in case.statements
            for r in (*(v.ref for v in ir.views(s)), *s.slices())} - counts_refs(case)


def initial(case: ir.Case, i: int) -> np.ndarray:
    """What ref ``i`` holds when the kernel starts: counts of 0, or for a data
    ref a pattern whose neighbours differ (so a value in the wrong place shows),
    small enough to be exact in every dtype.

    """
    ref = case.refs[i]
    if i not in data_refs(case):
        return np.zeros(ref.shape, dtype=np.int16 if ref.is_semaphore else dtype(ref.kind))
    return pattern(ref, i)


def pattern(ref: ir.Ref, i: int = 0) -> np.ndarray:
    """`initial`'s pattern for data ref ``ref``, number ``i`` (also a grid's
    operand: each block continues it, so blocks differ as neighbours do).
    Each ref's starts ``i`` further on, so that two refs of one shape differ
    too (a copy lost between them shows)."""
    values = (np.arange(math.prod(ref.shape), dtype=np.int64).reshape(ref.shape) + i) % 7 + 1
    return np.asarray(values % 2 == 1 if ref.kind == "bool" else values, dtype(ref.kind))


class Memory:
    """The state of a running case: each ref's elements, the last statement
    that changed each element, the semaphore reads, and the value each
    value-producing statement gave (by statement number)."""

    def __init__(self, case: ir.Case, device: int = 0, mesh: list | None = None):
        data = data_refs(case)
        self.case = case
        # Which device of the case's mesh this is, and every device's memory.
        self.device, self.mesh = device, mesh
        self.arrays = [np.array(initial(case, i), dtype=None if i in data else object)
                       for i in range(len(case.refs))]
        self.writers = [np.full(r.shape, None, dtype=object) for r in case.refs]
        self.reads: list[int] = []
        self.read_writers: list[int | None] = []
        self.unknown_reads: set[int] = set()   # (`Meaning.unknown_reads`)
        self.values: dict[int, np.ndarray] = {}
        # Operations started and not yet complete (a DMA in flight): each
        # says whether a later statement races with it (``conflict``).
        self.in_flight: list = []
        # The first race seen: the program runs on (a later wait may still
        # block forever, which a path would show by hanging), then has no
        # meaning for it.
        self.racy: str | None = None
        # On a mesh, what orders this device's accesses with other
        # devices' copies (`_over_devices`): a vector clock relative to this
        # device (entry k: the latest statement of the device k ahead
        # known to have happened before; entry 0, this device's own), the
        # clock each semaphore count was released with, and the own
        # statement that last touched each element of a data ref (1: the
        # kernel's start, which writes every operand).
        if mesh is not None:
            self.clock = np.zeros(case.devices, dtype=np.int64)
            self.clock[0] = 1
            self.released: dict[tuple[int, int], np.ndarray] = {}
            self.touched = [np.full(r.shape, int(i in data), dtype=np.int64)
                            for i, r in enumerate(case.refs)]
        # A copy racing only with what another device's kernel start wrote:
        # what it means where the devices run in lockstep (`Meaning.lockstep`).
        self.entry_race: str | None = None

    def elements(self, view: ir.View) -> np.ndarray:
        """The flat elements of ``view``'s ref, as the view's dtype sees them
        (a same-width bitcast reinterprets the same memory)."""
        flat = self.arrays[view.ref].reshape(-1)
        kind = ir.view_dtype(self.case, view)
        return flat if flat.dtype == object or kind == self.case.refs[view.ref].kind \
            else flat.view(dtype(kind))

    def where(self, view: ir.View) -> np.ndarray:
        """Flat positions of ``view`` in its ref (`positions`), as this
        device names them."""
        ref = self.case.refs[view.ref]
        if self.mesh is not None:
            view = ir.bound_to(view, self.device, len(self.mesh))
        return positions(tuple(ref.shape), view, ref.bits)

    def sender(self, device_id: ir.MeshIndex | None) -> Memory:
        """The device whose copy (or signal) to ``device_id`` lands here: the
        one as far behind as the target is ahead (itself, for no target)."""
        if device_id is None:
            return self
        return self.mesh[(self.device - device_id.offset) % len(self.mesh)]

    def move(self, n: int, ref: int, p: int, by: int) -> str | None:
        """Move count ``p`` (a flat position) of ``ref`` by ``by`` (statement
        ``n``). A count past int16 has no meaning: JAX documents no range
        for a semaphore's count, and the interpreters keep different ones
        (the HLO interpreter's int16 counts wrap, the TPU interpreter keeps
        int32). The model says so, as for a wait that blocks, instead of
        guessing a width."""
        flat = self.arrays[ref].reshape(-1)
        flat[p] += by
        self.writers[ref].reshape(-1)[p] = n
        if not -2**15 <= flat[p] < 2**15:
            return f"overflow: statement {n} takes a count to {flat[p]}, past int16"
        return None

    def scalar(self, n: int, stmt: ir.Statement, view: ir.View) -> int:
        """The one position a semaphore statement's view must denote."""
        pos = self.where(view)
        if pos.shape != ():
            raise ModelError(f"statement {n}: {stmt.tag} of a view of shape {pos.shape}")
        return int(pos)

    def run(self, block: tuple, start: int) -> str | None:
        """Run the statements of ``block``, numbered from ``start`` (`ir.flat`);
        return why the program has no meaning from there on, or None."""
        n = start
        for stmt in block:
            if self.racy is None:
                self.racy = next((why for op in self.in_flight
                                  if (why := op.conflict(self, n, stmt))), None)
            if (undefined := stmt.run(self, n)) is not None:
                return undefined
            if self.mesh is not None:
                for view in stmt.touches():
                    if not self.case.refs[view.ref].is_semaphore:
                        self.touched[view.ref].reshape(-1)[self.touched_by(view)] = self.clock[0]
                self.clock[0] += 1
            n += ir.size(stmt)
        return None

    def touched_by(self, view: ir.View) -> np.ndarray:
        """The flat positions a statement's ``view`` touches (`where`): for
        a view of no single elements (a bitcast), the whole ref."""
        try:
            return self.where(view).reshape(-1)
        except ModelError:   # no single elements (a bitcast): the whole ref
            return np.arange(self.arrays[view.ref].size)

    # --- the order between devices (on a mesh; no-ops on one device) ---

    def release(self, ref: int, p: int, device_id: ir.MeshIndex | None = None) -> None:
        """A signal (or a copy's count) to count ``p`` of ``ref``, sent by
        ``device_id``'s sender (`sender`; None: this device): a wait that
        takes it knows all its sender knew."""
        if self.mesh is None:
            return
        clock = np.roll(self.clock, -(device_id.offset if device_id else 0))
        self.released[(ref, p)] = np.maximum(self.released.get((ref, p), clock), clock)

    def acquire(self, ref: int, p: int) -> None:
        """A wait that took count ``p`` of ``ref``."""
        if self.mesh is not None and (ref, p) in self.released:
            self.clock = np.maximum(self.clock, self.released[(ref, p)])

    def unordered(self, n: int, dst: tuple[int, np.ndarray], device_id: ir.MeshIndex) -> str | None:
        """Why a copy landing here at ``dst`` from ``device_id``'s sender races
        with what this device did to it before (None: all of it is known
        to have happened before the sender started the copy)."""
        if self.mesh is None:
            return None
        known = self.clock[device_id.offset % len(self.mesh)]   # the sender's view of us
        last = self.touched[dst[0]].reshape(-1)[dst[1]]
        if (last > known).any():
            why = (f"racy: copy {n} lands in r{dst[0]} from device {-device_id.offset:+d}, "
                   "which does not wait for this device to be done with it")
            if (last[last > known] <= 1).all():   # only what the kernel's start wrote
                self.entry_race = self.entry_race or why + " (only the kernel's start)"
                return None
            return why
        return None

    def ended(self) -> str | None:
        """Why the end of a grid point has no meaning: a copy in flight
        (the next point would race with it)."""
        if self.in_flight:
            return (f"unwaited: the copy of statement {self.in_flight[0].n} is still in "
                    "flight as the grid point ends")
        return None

    def meaning(self, undefined: str | None = None) -> Meaning:
        undefined = undefined or self.racy
        unknown = frozenset((ref, int(p)) for op in self.in_flight for ref, p in op.unknown())
        return Meaning(tuple(self.reads), tuple(a.tolist() for a in self.arrays), undefined,
                       tuple(self.read_writers), tuple(w.tolist() for w in self.writers),
                       unknown, frozenset(self.unknown_reads))


def evaluate(case: ir.Case) -> Meaning:
    """Run ``case`` on the model. Raises ModelError for statements no valid
    program has (e.g. a non-scalar semaphore view, a remote signal)."""
    if case.devices is not None:
        return _over_devices(case)
    memory = Memory(case)
    if case.grid is not None:
        return _over_grid(case, memory)
    return memory.meaning(memory.run(case.body, 0))


def _over_grid(case: ir.Case, memory: Memory) -> Meaning:
    """The kernel run at each point of ``case.grid``, in order, on its blocks
    (`ir.Grid`): counts carry over, reads follow each other, a scoped ref
    starts afresh; each data ref ends as the stack of its blocks (a scoped
    one's, as it left each point)."""
    grid, data = case.grid, sorted(data_refs(case))
    fresh = {i: memory.arrays[i] for i, r in enumerate(case.refs) if r.scoped}
    stacks = {i: np.stack([fresh[i]] * grid.size) if i in fresh
              else pattern(grid.stacked(case.refs[i]), i) for i in data}
    writers = {i: np.full(stacks[i].shape, None, dtype=object) for i in data}
    for b in grid.blocks():
        for i in {*fresh, *data}:
            memory.arrays[i] = np.array(fresh[i] if i in fresh else stacks[i][b])
            memory.writers[i] = np.full(case.refs[i].shape, None, dtype=object)
        if (undefined := memory.run(case.body, 0) or memory.ended()) is not None:
            return memory.meaning(undefined)
        for i in data:
            # [b, ...]: a 0-D block's elements, not the array, go into the stack
            stacks[i][b, ...], writers[i][b, ...] = memory.arrays[i], memory.writers[i]
    for i in data:
        memory.arrays[i], memory.writers[i] = stacks[i], writers[i]
    return memory.meaning()


def _over_devices(case: ir.Case) -> Meaning:
    """The kernel run on every device of ``case``'s mesh, each on its own
    block of every operand (they continue the pattern, as a grid's blocks
    do), the top-level statements in lockstep; results stack the devices'.

    Every device runs the same program, and each device a statement names
    is a shift along the mesh (`ir.MeshIndex`), so every device is the
    target of exactly one sender, and the control flow is the same on all
    (nothing branches on the device). Counts therefore move alike on every
    device: a wait that blocks on one blocks on all, which is a deadlock
    whatever the interleaving. That is why a device only *pulls*: a signal
    it gets is the one it sends (the same amount, the same semaphore), and
    a copy that lands here is its sender's (`Memory.sender`), whose source
    it reads as the sender stands at that statement. A remote copy starts
    at the top level (ir checks), where lockstep puts every device."""
    devices = case.devices
    mesh: list[Memory] = []
    operands = data_refs(case) & {i for i, r in enumerate(case.refs) if not r.scoped}
    for d in range(devices):
        memory = Memory(case, d, mesh)
        for i in operands:
            ref = case.refs[i]
            memory.arrays[i] = np.array(pattern(ir.Ref(ref.kind, (devices, *ref.shape)), i)[d])
        mesh.append(memory)
    n, undefined = 0, None
    for stmt in case.body:
        undefined = next((why for m in mesh if (why := m.run((stmt,), n)) is not None), None)
        if undefined is not None:
            break
        n += ir.size(stmt)
    sizes = [a.size for a in mesh[0].arrays]
    racy = next((m.racy for m in mesh if m.racy), None)
    entry = next((m.entry_race for m in mesh if m.entry_race), None)
    return Meaning(
        tuple(r for m in mesh for r in m.reads),
        tuple(np.stack([m.arrays[i] for m in mesh]).tolist() for i in range(len(sizes))),
        undefined or racy or entry,
        tuple(w for m in mesh for w in m.read_writers),
        tuple(np.stack([m.writers[i] for m in mesh]).tolist() for i in range(len(sizes))),
        frozenset((ref, int(p) + d * sizes[ref]) for d, m in enumerate(mesh)
                  for op in m.in_flight for ref, p in op.unknown()),
        frozenset(k + sum(len(o.reads) for o in mesh[:d])
                  for d, m in enumerate(mesh) for k in m.unknown_reads),
        lockstep=not (undefined or racy) and entry is not None)


def unrolled(case: ir.Case) -> ir.Case | None:
    """``case`` with every control statement replaced by the blocks it runs
    (a loop's body ``count`` times, a cond's branch taken): the same program
    by the model's semantics, with no control flow left to discharge. A
    block that never runs stays, under a static ``pl.when(0 != 0)``, which
    traces nothing: every ref keeps its use, so it starts from the same
    contents (`initial`). None when the unrolled program is none the IR
    can say (a debug print of a step's slice: only whole refs are printed).

    >>> from fuzz.ops.control import Loop
    >>> from fuzz.ops.semaphore import Signal
    >>> sig = Signal(ir.View(0), ir.Int(1))
    >>> len(unrolled(ir.Case((ir.Ref("int16", ()),), (Loop(ir.Int(3), (sig,)),))).body)
    3
    """
    out: list[ir.Statement] = []
    latest: dict[int, int] = {}   # a statement's number -> its newest copy's
    number = 0                    # the number the next statement appended gets

    def append(stmt):
        nonlocal number
        out.append(stmt)
        number += ir.size(stmt)

    def copy(block, start):
        n = start
        for stmt in block:
            if not stmt.block_fields:
                latest[n] = number
                append(ir.replace_nodes(stmt, ir.Result, lambda r: ir.Result(latest[r.stmt])))
            else:
                blocks, firsts, runs = stmt.blocks(), stmt.firsts(n), stmt.runs()
                for b, block in runs:
                    copy(block, firsts[b])
                if stmt.slices():
                    # Dead, the statement as a whole (its block names the slices
                    # of its refs): the refs it slices keep their use.
                    append(_dead((stmt,), n, number, latest))
                for b in sorted(set(range(len(blocks))) - {b for b, _ in runs}):
                    if not stmt.slices():
                        append(_dead(blocks[b], firsts[b], number, latest))
            n += ir.size(stmt)
    copy(case.body, 0)
    try:
        return dataclasses.replace(case, body=tuple(out))
    except ir.IRError:
        return None


def _dead(block, first, at, latest):
    """``block`` (its first statement numbered ``first``) under a
    ``pl.when`` that never runs, numbered ``at``: its own values renumbered
    to follow, earlier ones to their newest copies."""
    inside = len(ir.flat(block))
    return When(ir.Int(0), ir.replace_nodes(block, ir.Result, lambda r: ir.Result(
        at + 1 + r.stmt - first if first <= r.stmt < first + inside else latest[r.stmt])))

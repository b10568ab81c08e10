"""What the DMA ops share: a copy's operands (source and destination views
of data refs, a ()-shaped view of a DMA semaphore for each end), how they
are drawn, and what a copy in flight means for the statements around it.

What a copy adds to its semaphore follows what JAX documents:
docs/pallas/tpu/distributed.md, "DMA Semaphores": "On DMA start, the local
device will begin to increment the value of `send_sem` and the receiver's
`recv_sem` [...]. Waiting on a semaphore will block until the value of the
semaphore reaches the total bytes of data sent/received; when the value is
reached, [...] the semaphore's value is decremented by the same amount."
So a copy adds its size in bytes to each of its semaphores, and a wait
subtracts the size in bytes of the view its descriptor names (the
destination for a write, the source for a read); a wait that would take a
count below 0 blocks forever.

A program that touches a copy's destination (or writes its source) while
the copy is in flight, between its start and the wait that completes it,
is racy: hardware may see either value, so the model gives it no meaning
(`InFlight`), and the paths need not agree with each other either.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from fuzz import elements, ir
from fuzz.ops.base import Op
from fuzz.ops.ref.common import data_ref_numbers
from fuzz.ops.semaphore.common import scalar_views
from strategies.transforms import TRANSFORM_KINDS, transform_chains

# What local copies take beyond make_async_copy(src, dst, sem) and .wait()
# (features of fuzz.compat: 0.12.0 on).
SRC_SEM = "pltpu.make_async_copy(src_sem=)"
WAIT_WRITE = "jax._src.pallas.mosaic.primitives.AsyncCopyDescriptor.wait_write"


def nbytes(refs, view: ir.View) -> int:
    """Size of ``view`` in bytes, as a copy of it moves them."""
    kind = ir.view_dtype(refs, view)
    return math.prod(ir.view_shape(refs, view)) * ir.dtype_bits(kind) // 8


@dataclass(frozen=True)
class DmaOp(Op):
    """A copy's operands, which its start and its waits name alike. With a
    ``device_id`` (a device of the case's mesh), a remote copy: ``dst``
    and ``sem`` (its ``recv_sem``) are the target device's, ``src`` and
    ``src_sem`` (its ``send_sem``, which it needs) this one's. So a wait
    on ``sem`` (``wait_recv``) completes what lands here, a wait on
    ``src_sem`` (``wait_send``) what leaves."""
    src: ir.View
    dst: ir.View
    sem: ir.View
    src_sem: ir.View | None = None
    device_id: ir.MeshIndex | None = field(default=None, kw_only=True)
    family = "dma"
    pallas_api = True

    def copy_args(self, e) -> str:
        """``src, dst, sem[, src_sem=...]`` as source (a remote copy's:
        ``src, dst, send_sem, recv_sem, device_id=...``)."""
        src, dst, sem = e.view(self.src), e.view(self.dst), e.view(self.sem)
        if self.device_id is not None:
            send, device = e.view(self.src_sem), e.device(self.device_id)
            return f"{src}, {dst}, {send}, {sem}, device_id={device}"
        extra = f", src_sem={e.view(self.src_sem)}" if self.src_sem is not None else ""
        return f"{src}, {dst}, {sem}{extra}"

    def descriptor_source(self, e) -> str:
        remote = "_remote" if self.device_id is not None else ""
        return f"pltpu.make_async{remote}_copy({self.copy_args(e)})"

    def operands(self) -> tuple:
        return self.src, self.dst, self.sem, self.src_sem, self.device_id

    def semaphores(self) -> tuple[ir.View, ...]:
        """The semaphore views the statement moves."""
        return tuple(v for v in (self.sem, self.src_sem) if v is not None)

    def counted(self) -> tuple[ir.View, ...]:
        return self.semaphores()

    def refused_under(self, transform, path):
        if transform == "grad":
            return "JAX differentiates no DMA primitive"
        if transform == "vmap":
            return "JAX batches no DMA primitive"   # dma_start has no batching rule
        if transform == "partial-discharge" and getattr(self, "add", False):
            # dma_start_discharge_rule: "DMA partial discharge add=True not yet implemented."
            return "JAX documents add=True as not dischargeable"
        return None

    def check(self, case, n):
        for v in (self.src, self.dst):
            if case.refs[v.ref].is_semaphore:
                raise ir.IRError(f"statement {n}: a copy of a semaphore")
        if self.device_id is not None and (case.devices is None or self.src_sem is None):
            raise ir.IRError(f"statement {n}: a remote copy needs a mesh and a send semaphore")

    def needs(self):
        # (a remote copy's send semaphore is make_async_remote_copy's own)
        return (SRC_SEM,) if self.src_sem is not None and self.device_id is None else ()

    def mistakes(self, case) -> set[str]:
        refs, found = case.refs, set()
        try:
            shapes = [ir.view_shape(refs, v) for v in (self.src, self.dst, *self.semaphores())]
        except ir.IRError:
            return {"dma_out_of_bounds"}
        if shapes[0] != shapes[1]:
            found.add("dma_shape")
        if ir.view_dtype(refs, self.src) != ir.view_dtype(refs, self.dst):
            found.add("dma_dtype")
        for sem in self.semaphores():
            if refs[sem.ref].kind not in ("dma", "int16"):
                found.add("dma_semaphore_kind")
            elif ir.view_shape(refs, sem) != ():   # known to be in bounds: see above
                found.add("dma_semaphore_shape")
        return found

    def sized(self, memory, n) -> list[tuple[int, int]]:
        """(flat position, bytes) of each semaphore the statement moves,
        with the size of the view it is counted by: the destination for
        ``sem``, the source for ``src_sem``."""
        refs = memory.case.refs
        out = [(memory.scalar(n, self, self.sem), nbytes(refs, self.dst))]
        if self.src_sem is not None:
            out.append((memory.scalar(n, self, self.src_sem), nbytes(refs, self.src)))
        return out


@dataclass
class InFlight:
    """A started copy (statement ``n``) not yet waited on: the elements it
    writes and reads, and the bytes each of its semaphores still expects.
    `fuzz.model.Memory` asks each in-flight operation whether a statement
    conflicts with it."""
    n: int
    dst: tuple[int, np.ndarray]    # (ref, flat positions)
    src: tuple[int, np.ndarray]
    pending: dict                  # (sem ref, flat position) -> bytes not yet waited for

    def unknown(self):
        """(ref, flat position) of what the copy writes and counts: no path
        need agree on them while it is in flight."""
        yield from ((self.dst[0], p) for p in self.dst[1])
        yield from ((ref, p) for ref, p in self.pending)

    def conflict(self, memory, n: int, stmt) -> str | None:
        """Why statement ``n`` races with this copy (None: it does not)."""
        if isinstance(stmt, DmaOp):
            return None   # a copy checks its own operands (`DmaStart.run`)
        reads_only = getattr(stmt, "reads_only", False)
        for view in ir.views(stmt):
            if view.ref not in (self.dst[0], self.src[0]):
                continue
            touched = (view.ref, memory.touched_by(view))
            if overlap(touched, self.dst):
                return (f"racy: statement {n} {'reads' if reads_only else 'writes'} the "
                        f"destination of copy {self.n} in flight")
            if not reads_only and overlap(touched, self.src):
                return f"racy: statement {n} writes the source of copy {self.n} in flight"
        return None


def overlap(a: tuple[int, np.ndarray], b: tuple[int, np.ndarray]) -> bool:
    """Whether two (ref, flat positions) name a common element."""
    return a[0] == b[0] and bool(np.isin(a[1], b[1]).any())


def dma_semaphores(refs, among=None) -> list[int]:
    """The refs a copy may count on: DMA semaphores, and the int16 arrays
    that stand in for semaphores (in interpret mode), those not ``among``
    the data refs a copy moves."""
    return [i for i, r in enumerate(refs) if 0 not in r.shape and (
        r.kind == "dma" or r.kind == "int16" and among is not None and i not in among)]


@st.composite
def _copy_pair(draw, refs, usable, kinds, dynamic, max_chain):
    """A (src, dst) pair of `copies`."""
    dst_ref = draw(st.sampled_from(usable))
    kind = refs[dst_ref].kind
    if not [i for i in usable if i != dst_ref and refs[i].kind == kind] and \
            refs[dst_ref].shape[:1] >= (2,) and draw(st.booleans()):
        # One ref of its dtype: a copy between two of its rows.
        a, b = draw(st.lists(st.integers(0, refs[dst_ref].shape[0] - 1), min_size=2,
                             max_size=2, unique=True))
        return (ir.View(dst_ref, (ir.At((ir.Int(a),)),)),
                ir.View(dst_ref, (ir.At((ir.Int(b),)),)))
    dst = ir.View(dst_ref, draw(transform_chains(
        refs[dst_ref].shape, max_length=max_chain, dynamic=dynamic, scalar=False,
        kinds=kinds, dtype=refs[dst_ref].kind)))
    shape, kind = ir.view_shape(refs, dst), ir.view_dtype(refs, dst)
    # A source of the same shape and dtype: a chain on a ref of that dtype
    # (or the destination's, bitcast) reaching the shape, found by
    # drawing a few chains.
    same = [i for i in usable if refs[i].kind in (kind, refs[dst_ref].kind)]
    others = [i for i in same if i != dst_ref]   # a ref copied into itself races often
    src_ref = draw(st.sampled_from(others or same))
    for _ in range(6):
        chain = draw(transform_chains(refs[src_ref].shape, max_length=max_chain,
                                      dynamic=dynamic, scalar=False, kinds=kinds,
                                      dtype=refs[src_ref].kind))
        src = ir.View(src_ref, chain)
        if (ir.view_shape(refs, src), ir.view_dtype(refs, src)) == (shape, kind) and (
                src_ref != dst_ref or _disjoint(refs, src, dst)):
            return src, dst
    # The destination's own chain, on a ref of its shape, always fits.
    src_ref = next((i for i in (*others, dst_ref) if refs[i].shape == refs[dst_ref].shape
                    and refs[i].kind == refs[dst_ref].kind), dst_ref)
    return ir.View(src_ref, dst.transforms), dst


def copies(refs, *, among, dynamic, max_chain, transforms):
    """(src, dst) view pairs of data refs among ``among``: the same shape
    and dtype, each through a transform chain as data refs are drawn
    (a destination drawn first, then a source of its shape, or the same
    view shape of another ref), or None when no data ref is there."""
    usable = data_ref_numbers(refs, among)
    if not usable:
        return None
    kinds = tuple(TRANSFORM_KINDS if transforms is None else transforms)

    return _copy_pair(refs, usable, kinds, dynamic, max_chain)


def _disjoint(refs, a: ir.View, b: ir.View) -> bool:
    try:
        where = [elements.positions(tuple(refs[v.ref].shape), v, refs[v.ref].bits)
                 for v in (a, b)]
    except elements.ModelError:
        return False
    return not np.isin(where[0], where[1]).any()


def scalar_semaphores(refs, *, among, dynamic, max_chain, transforms):
    """()-shaped views of the semaphores a copy may count on (`dma_semaphores`;
    None: none)."""
    usable = dma_semaphores(refs, among)
    if not usable:
        return None
    return scalar_views(refs, usable, dynamic=dynamic, max_chain=max_chain, transforms=transforms)

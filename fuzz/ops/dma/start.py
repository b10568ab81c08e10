"""``pltpu.make_async_copy(src, dst, sem).start()`` (or
``pltpu.async_copy(src, dst, sem)``): start copying ``src`` into ``dst``.
The model copies at once and adds the copy's bytes to ``sem`` (and to
``src_sem``, if given); the copy is in flight until a wait completes it
(`fuzz.ops.dma.common`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import compat, ir
from fuzz.ops.dma.common import SRC_SEM, DmaOp, InFlight, copies, overlap, scalar_semaphores
from fuzz.ops.ref.common import written

ADD = "jax._src.pallas.mosaic.primitives.AsyncCopyDescriptor.start(add=)"


@dataclass(frozen=True)
class DmaStart(DmaOp):
    # "descriptor": make_async_copy(...).start(priority=...); "async_copy":
    # pltpu.async_copy(..., priority=...), which starts it and returns the descriptor.
    api: str = "descriptor"
    priority: int = 0
    add: bool = False
    tag = "dma_start"
    primitive = "dma_start"

    def check(self, case, n):
        super().check(case, n)
        if self.api not in ("descriptor", "async_copy") or self.priority not in (0, 1):
            raise ir.IRError(f"statement {n}: api {self.api!r}, priority {self.priority!r}")
        if self.device_id is not None and ir.enclosing(case.body, n):
            # The model runs the devices in lockstep at the top level (model.py).
            raise ir.IRError(f"statement {n}: a remote copy starts at the top level")

    def source(self, e) -> str:
        params = [f"priority={self.priority}"] if self.priority else []
        params += ["add=True"] if self.add else []
        if self.api == "async_copy":
            remote = "_remote" if self.device_id is not None else ""
            return f"pltpu.async{remote}_copy({', '.join([self.copy_args(e), *params])})"
        return f"{self.descriptor_source(e)}.start({', '.join(params)})"

    def needs(self):
        return (*super().needs(), *((ADD,) if self.add else ()))

    def run(self, memory, n):
        # What lands here is what the sender's copy, the same statement,
        # names there: its source, and its destination as it indexes it.
        sender = memory.sender(self.device_id)
        landed = ir.bound_to(self.dst, sender.device, memory.case.devices or 1)
        dst = (self.dst.ref, memory.where(landed).reshape(-1))
        src = (self.src.ref, memory.where(self.src).reshape(-1))
        if overlap(dst, src):
            memory.racy = memory.racy or f"racy: copy {n} writes elements it reads"
        for other in memory.in_flight:
            if overlap(dst, other.dst) or overlap(dst, other.src) or overlap(src, other.dst):
                memory.racy = memory.racy or f"racy: copy {n} overlaps copy {other.n} in flight"
        if self.device_id is not None:
            memory.racy = memory.racy or memory.unordered(n, dst, self.device_id)
        value = sender.elements(self.src)[sender.where(self.src)]
        if self.add:
            value = memory.elements(landed)[memory.where(landed)] + value
        written(memory, n, landed, value)
        pending = {}
        for k, (sem, (p, size)) in enumerate(zip(self.semaphores(), self.sized(memory, n))):
            # the receive count comes with what its sender knew, the send count ours
            memory.release(sem.ref, p, self.device_id if k == 0 else None)
            pending[(sem.ref, p)] = pending.get((sem.ref, p), 0) + size
            if (undefined := memory.move(n, sem.ref, p, size)) is not None:
                return undefined
        memory.in_flight.append(InFlight(n, dst, src, pending))
        return None

    def effect(self) -> int:
        return 0   # by bytes, which depend on the views: see `sized`

    def touches(self):
        # it reads its source here; a remote copy writes another device's destination
        return (self.src,) if self.device_id is not None else (self.src, self.dst)

    def simpler(self, case):
        if self.device_id is not None:
            yield replace(self, device_id=None)
        if self.src_sem is not None:
            yield replace(self, src_sem=None)
        if self.api != "descriptor":
            yield replace(self, api="descriptor")
        if self.priority:
            yield replace(self, priority=0)
        if self.add:
            yield replace(self, add=False)

    def complexity(self) -> int:
        return (self.src_sem is not None) + (self.api != "descriptor") + bool(self.priority) \
            + self.add + (self.device_id is not None)

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        pairs = copies(refs, among=among, dynamic=dynamic, max_chain=max_chain,
                       transforms=transforms)
        sems = scalar_semaphores(refs, among=among, dynamic=dynamic, max_chain=max_chain,
                                 transforms=transforms)
        if pairs is None or sems is None:
            return None
        src_sems = st.none() | sems if compat.has(SRC_SEM) else st.none()
        return st.builds(
            lambda pair, sem, src_sem, api, priority, add: cls(
                *pair, sem, src_sem, api=api, priority=priority, add=add),
            pairs, sems, src_sems, st.sampled_from(("descriptor", "async_copy")),
            st.sampled_from((0, 1)),
            st.sampled_from((False, False, False, True)) if compat.has(ADD) else st.just(False))

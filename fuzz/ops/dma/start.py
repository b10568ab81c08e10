"""``pltpu.make_async_copy(src, dst, sem).start()`` (or
``pltpu.async_copy(src, dst, sem)``): start copying ``src`` into ``dst``.
The model copies at once and adds the copy's bytes to ``sem`` (and to
``src_sem``, if given); the copy is in flight until a wait completes it
(`fuzz.ops.dma.common`)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.dma.common import DmaOp, InFlight, copies, overlap, scalar_semaphores


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

    def not_applicable(self, path):
        from fuzz import compat
        if self.src_sem is not None and "src_sem" not in compat.dma_features():
            return "this JAX release's make_async_copy takes no src_sem"
        return None

    def source(self, e) -> str:
        params = [f"priority={self.priority}"] if self.priority else []
        params += ["add=True"] if self.add else []
        if self.api == "async_copy":
            return f"pltpu.async_copy({', '.join([self.copy_args(e), *params])})"
        return f"{self.descriptor_source(e)}.start({', '.join(params)})"

    def run(self, memory, n):
        from fuzz.ops.ref.common import written
        dst = (self.dst.ref, memory.where(self.dst).reshape(-1))
        src = (self.src.ref, memory.where(self.src).reshape(-1))
        if overlap(dst, src):
            memory.racy = memory.racy or f"racy: copy {n} writes elements it reads"
        for other in memory.in_flight:
            if overlap(dst, other.dst) or overlap(dst, other.src) or overlap(src, other.dst):
                memory.racy = memory.racy or f"racy: copy {n} overlaps copy {other.n} in flight"
        value = memory.elements(self.src)[memory.where(self.src)]
        if self.add:
            value = memory.elements(self.dst)[memory.where(self.dst)] + value
        written(memory, n, self.dst, value)
        pending = {}
        for sem, (p, size) in zip(self.semaphores(), self.sized(memory, n)):
            pending[(sem.ref, p)] = pending.get((sem.ref, p), 0) + size
            if (undefined := memory.move(n, sem.ref, p, size)) is not None:
                return undefined
        memory.in_flight.append(InFlight(n, dst, src, pending))
        return None

    def effect(self) -> int:
        return 0   # by bytes, which depend on the views: see `sized`

    def simpler(self, case):
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
            + self.add

    @classmethod
    def completed(cls, body, refs):
        from fuzz.ops.dma.order import mutants, waited_before_use
        return mutants(waited_before_use(body, refs))

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        pairs = copies(refs, among=among, dynamic=dynamic, max_chain=max_chain,
                       transforms=transforms)
        sems = scalar_semaphores(refs, among=among, dynamic=dynamic, max_chain=max_chain,
                                 transforms=transforms)
        if pairs is None or sems is None:
            return None
        from fuzz import compat
        src_sems = st.none() | sems if "src_sem" in compat.dma_features() else st.none()
        return st.builds(
            lambda pair, sem, src_sem, api, priority, add: cls(*pair, sem, src_sem, api,
                                                                priority, add),
            pairs, sems, src_sems, st.sampled_from(("descriptor", "async_copy")),
            st.sampled_from((0, 1)), st.sampled_from((False, False, False, True)))

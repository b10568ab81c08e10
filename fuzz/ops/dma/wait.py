"""``pltpu.make_async_copy(src, dst, sem).wait()`` (or ``.wait_write()`` /
``.wait_read()``): wait for a copy with these operands to complete. A
wait on the destination (``wait_write``; ``wait``, which waits on the
source first when the descriptor has a ``src_sem``) subtracts the
destination's bytes from ``sem``; ``wait_read`` the source's bytes from
``src_sem`` (`fuzz.ops.dma.common`). A count below that blocks forever."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import compat, ir
from fuzz.ops.dma.common import WAIT_WRITE, DmaOp
from fuzz.ops.dma.start import DmaStart

WAITS = ("wait", "wait_write", "wait_read")
# A remote copy's descriptor names them by the device's part in it.
REMOTE_NAMES = {"wait_write": "wait_recv", "wait_read": "wait_send"}


@dataclass(frozen=True)
class DmaWait(DmaOp):
    method: str = "wait"
    tag = "dma_wait"
    primitive = "dma_wait"

    def check(self, case, n):
        super().check(case, n)
        if self.method not in WAITS or self.method == "wait_read" and self.src_sem is None:
            raise ir.IRError(f"statement {n}: {self.method} (a wait_read needs a src_sem)")

    def needs(self):
        # (wait_send / wait_recv: every release has them)
        return (*super().needs(), *((WAIT_WRITE,) if self.method != "wait" and self.device_id is None
                                    else ()))

    def source(self, e) -> str:
        method = REMOTE_NAMES.get(self.method, self.method) if self.device_id is not None \
            else self.method
        return f"{self.descriptor_source(e)}.{method}()"

    def waited(self) -> tuple[int, ...]:
        """Which of `sized`'s semaphores it waits on, in order."""
        if self.method == "wait_write":
            return (0,)
        if self.method == "wait_read":
            return (1,)
        return (1, 0) if self.src_sem is not None else (0,)

    def run(self, memory, n):
        sized, views = self.sized(memory, n), self.semaphores()
        for k in self.waited():
            p, size = sized[k]
            ref = views[k].ref
            flat = memory.arrays[ref].reshape(-1)
            if flat[p] < size:
                return (f"statement {n} waits for {size} bytes on a DMA semaphore holding "
                        f"{flat[p]}: it blocks forever")
            flat[p] -= size
            memory.writers[ref].reshape(-1)[p] = n
            memory.acquire(ref, p)
            complete(memory, (ref, p), size)
        return None

    def touches(self):
        return ()   # it only counts: what the copy moved is touched by who uses it

    def simpler(self, case):
        if self.device_id is not None:
            yield replace(self, device_id=None)
        if self.method != "wait":
            yield replace(self, method="wait")

    def complexity(self) -> int:
        return self.method != "wait"

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        """A wait for one of the copies ``body`` started (with its operands):
        the wait real kernels write, which never blocks."""
        started = [s for s in body if isinstance(s, DmaStart) and (
            among is None or {s.src.ref, s.dst.ref} <= set(among))]
        if not started:
            return None
        waits = WAITS if compat.has(WAIT_WRITE) else WAITS[:1]
        return st.sampled_from(started).flatmap(lambda s: st.sampled_from(
            waits if s.src_sem is not None else waits[:2]).map(
            lambda m: cls(s.src, s.dst, s.sem, s.src_sem, m, device_id=s.device_id)))


def complete(memory, key, size) -> None:
    """Credit ``size`` waited bytes on semaphore ``key`` to the copies in
    flight on it, oldest first; a copy whose every semaphore was waited
    for is complete."""
    for copy in list(memory.in_flight):
        if size <= 0:
            break
        owed = copy.pending.get(key, 0)
        if owed:
            paid = min(owed, size)
            copy.pending[key] = owed - paid
            size -= paid
        if not any(copy.pending.values()):
            memory.in_flight.remove(copy)

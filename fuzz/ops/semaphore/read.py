"""``out[k] = pl.semaphore_read(view)``: one count into the next ``out`` slot."""
from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.semaphore.common import READ_KINDS, SemaphoreOp


@dataclass(frozen=True)
class Read(SemaphoreOp):
    view: ir.View
    tag = "read"
    primitive = "semaphore_read"
    kinds = READ_KINDS   # DMA semaphores may be read, not signalled or waited on

    def source(self, e) -> str:
        return f"out[{e.read_slot()}] = pl.semaphore_read({e.view(self.view)})"

    def run(self, memory, n):
        p = memory.scalar(n, self, self.view)
        memory.reads.append(int(memory.arrays[self.view.ref].reshape(-1)[p]))
        memory.read_writers.append(memory.writers[self.view.ref].reshape(-1)[p])

    @classmethod
    def with_view(cls, view, *, dynamic):
        return st.just(cls(view))

"""``v = pl.semaphore_read(view); out[k] = v``: one count into the next
``out`` slot, and an int32 value later statements may use (a data store:
data flow from semaphores into data refs)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.semaphore.common import READ_KINDS, SemaphoreOp


@dataclass(frozen=True)
class Read(SemaphoreOp):
    view: ir.View
    tag = "read"
    public_call = "pl.semaphore_read"
    primitive = "semaphore_read"
    kinds = READ_KINDS   # DMA semaphores may be read, not signalled or waited on
    produces_value = True
    reads_only = True
    writes_out = True

    def source(self, e) -> str:
        return (f"v{e.n} = pl.semaphore_read({e.view(self.view)})\n"
                f"out[{e.read_slot()}] = v{e.n}")

    def run(self, memory, n):
        p = memory.scalar(n, self, self.view)
        if any((self.view.ref, p) == moved for op in memory.in_flight for moved in op.unknown()):
            memory.unknown_reads.add(len(memory.reads))   # a copy in flight moves this count
        count = int(memory.arrays[self.view.ref].reshape(-1)[p])
        memory.reads.append(count)
        memory.read_writers.append(memory.writers[self.view.ref].reshape(-1)[p])
        memory.values[n] = np.asarray(count, np.int64).astype(np.int32)   # wraps, as int32 does

    def value_type(self, case_or_refs):
        return (), "int32"

    @classmethod
    def with_view(cls, view, *, dynamic, earlier=()):
        return st.just(cls(view))

"""``pl.semaphore_wait(view, value, decrement=...)``: takes ``value`` from one
count (or, with ``decrement=False``, only waits for it)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.semaphore.common import SemaphoreOp, counts

# decrement=False is rare (and not where shrinking heads): its discharge
# collapses the ref (a known JAX bug), which would stop most cases at the
# first tier and pull every shrink towards that bug.
_DECREMENT = st.integers(0, 7).map(lambda n: n < 7)


@dataclass(frozen=True)
class Wait(SemaphoreOp):
    view: ir.View
    value: ir.Int = ir.Int(1)
    decrement: bool = True
    tag = "wait"
    public_call = "pl.semaphore_wait"
    primitive = "semaphore_wait"

    def source(self, e) -> str:
        # The amount positionally, as every release takes it (0.6.2's is ``dec``).
        return (f"pl.semaphore_wait({e.view(self.view)}, {e.operand(self.value)}"
                + ("" if self.decrement else ", decrement=False") + ")")

    def needs(self):
        return () if self.decrement else ("pl.semaphore_wait(decrement=)",)

    def run(self, memory, n):
        p = memory.scalar(n, self, self.view)
        flat = memory.arrays[self.view.ref].reshape(-1)
        if flat[p] < self.value.value:
            memory.writers[self.view.ref].reshape(-1)[p] = n
            return (f"statement {n} waits for {self.value.value} on a count of "
                    f"{flat[p]}: it would block forever")
        memory.acquire(self.view.ref, p)
        return self.moved(memory, n, p, self.effect()) if self.effect() else None

    def effect(self) -> int:
        return -self.value.value if self.decrement else 0

    def amount(self):
        return self.value

    def vary(self):
        # The lowest bit flipped keeps the amount in int32.
        return replace(self, value=ir.Int(self.value.value ^ 1, True)) if self.value.dynamic else self

    def simpler(self, case):
        if not self.decrement:
            yield replace(self, decrement=True)
        for value in ir.simpler_ints(self.value):
            yield replace(self, value=value)

    def complexity(self) -> int:
        return not self.decrement

    @classmethod
    def with_view(cls, view, *, dynamic, earlier=()):
        # Mostly small amounts: a wait for more than the count blocks forever
        # and leaves the program without a defined meaning (see fuzz/model.py).
        small = st.builds(ir.Int, st.integers(0, 3),
                          st.booleans() if dynamic else st.just(False))
        return st.builds(cls, st.just(view), small | counts(dynamic=dynamic), _DECREMENT)

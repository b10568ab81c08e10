"""``pl.semaphore_signal(view, inc, device_id=..., device_id_type=..., core_index=...)``:
adds ``inc`` to one count."""
from __future__ import annotations

from dataclasses import dataclass, replace

from fuzz import ir
from fuzz.ops.semaphore.common import SemaphoreOp, counts


@dataclass(frozen=True)
class Signal(SemaphoreOp):
    view: ir.View
    inc: ir.Int = ir.Int(1)
    device_id: ir.Int | None = None
    device_id_type: str | None = None  # "mesh" | "logical" (deprecated in JAX)
    core_index: ir.Int | None = None
    tag = "signal"
    primitive = "semaphore_signal"

    def check(self, case, n):
        if self.device_id_type not in (None, "mesh", "logical"):
            raise ir.IRError(f"device_id_type {self.device_id_type!r}")

    def source(self, e) -> str:
        extra = ""
        if self.device_id is not None:
            extra += f", device_id={e.operand(self.device_id)}"
        if self.device_id_type is not None:
            extra += f", device_id_type=pl.DeviceIdType.{self.device_id_type.upper()}"
        if self.core_index is not None:
            extra += f", core_index={e.operand(self.core_index)}"
        return f"pl.semaphore_signal({e.view(self.view)}, {e.operand(self.inc)}{extra})"

    def run(self, memory, n):
        p = memory.scalar(n, self, self.view)
        if self.device_id is not None or self.core_index is not None:
            from fuzz.model import ModelError
            raise ModelError(f"statement {n}: a signal to another device or core")
        if self.inc.value:
            memory.arrays[self.view.ref].reshape(-1)[p] += self.inc.value
            memory.writers[self.view.ref].reshape(-1)[p] = n

    def effect(self) -> int:
        return self.inc.value

    def amount(self):
        return self.inc

    def mistakes(self, case):
        found = super().mistakes(case)
        if self.device_id is not None or self.device_id_type is not None:
            found.add("remote")
        if self.core_index is not None:
            found.add("core_index")
        return found

    def vary(self):
        # The lowest bit flipped keeps the amount in int32.
        return replace(self, inc=ir.Int(self.inc.value ^ 1, True)) if self.inc.dynamic else self

    def simpler(self, case):
        for name in ("device_id", "device_id_type", "core_index"):
            if getattr(self, name) is not None:
                yield replace(self, **{name: None})
        for inc in ir.simpler_ints(self.inc):
            yield replace(self, inc=inc)

    def complexity(self) -> int:
        return sum(x is not None for x in (self.device_id, self.device_id_type, self.core_index))

    @classmethod
    def with_view(cls, view, *, dynamic):
        return counts(dynamic=dynamic).map(lambda inc: cls(view, inc))

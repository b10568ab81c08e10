"""``pl.semaphore_signal(view, inc, device_id=..., device_id_type=..., core_index=...)``:
adds ``inc`` to one count; ``inc`` is an integer operand or the int32 value
an earlier statement produced (data flowing into a count)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import elements, ir
from fuzz.ops.semaphore.common import SemaphoreOp, counts


@dataclass(frozen=True)
class Signal(SemaphoreOp):
    view: ir.View
    inc: ir.Int | ir.Result = ir.Int(1)
    device_id: ir.Int | ir.MeshIndex | None = None   # a MeshIndex: a device of the mesh
    device_id_type: str | None = None  # "mesh" | "logical" (deprecated in JAX)
    core_index: ir.Int | None = None
    tag = "signal"
    public_call = "pl.semaphore_signal"
    primitive = "semaphore_signal"

    def check(self, case, n):
        if self.device_id_type not in (None, "mesh", "logical"):
            raise ir.IRError(f"device_id_type {self.device_id_type!r}")
        if isinstance(self.inc, ir.Result) and (
                got := case.statements[self.inc.stmt].value_type(case)) != ((), "int32"):
            raise ir.IRError(f"statement {n} signals by a value of {got}, not an int32 scalar")

    def source(self, e) -> str:
        extra = ""
        if self.device_id is not None:
            extra += f", device_id={e.device(self.device_id)}"
        if self.device_id_type is not None:
            extra += f", device_id_type=pl.DeviceIdType.{self.device_id_type.upper()}"
        if self.core_index is not None:
            extra += f", core_index={e.operand(self.core_index)}"
        view = e.view(self.view)
        inc = e.result(self.inc) if isinstance(self.inc, ir.Result) else e.operand(self.inc)
        return f"pl.semaphore_signal({view}, {inc}{extra})"

    def run(self, memory, n):
        p = memory.scalar(n, self, self.view)
        # A signal to a device of the mesh is, here, the one its sender
        # sends (model._over_devices); any other target has no model.
        if isinstance(self.device_id, ir.Int) or self.core_index is not None:
            raise elements.ModelError(f"statement {n}: a signal to another device or core")
        inc = (int(memory.values[self.inc.stmt]) if isinstance(self.inc, ir.Result)
               else self.inc.value)
        memory.release(self.view.ref, p, self.device_id)
        return self.moved(memory, n, p, inc) if inc else None

    def effect(self) -> int:
        """The static amount (0 when it is a value known only as it runs)."""
        return self.inc.value if isinstance(self.inc, ir.Int) else 0

    def amount(self):
        return self.inc if isinstance(self.inc, ir.Int) else None

    def mistakes(self, case):
        found = super().mistakes(case)
        if isinstance(self.device_id, ir.Int) or self.device_id_type is not None:
            found.add("remote")
        if self.core_index is not None:
            found.add("core_index")
        return found

    def vary(self):
        # The lowest bit flipped keeps the amount in int32.
        dynamic = isinstance(self.inc, ir.Int) and self.inc.dynamic
        return replace(self, inc=ir.Int(self.inc.value ^ 1, True)) if dynamic else self

    def simpler(self, case):
        for name in ("device_id", "device_id_type", "core_index"):
            if getattr(self, name) is not None:
                yield replace(self, **{name: None})
        if isinstance(self.inc, ir.Result):
            yield replace(self, inc=ir.Int(1))
            return
        for inc in ir.simpler_ints(self.inc):
            yield replace(self, inc=inc)

    def complexity(self) -> int:
        return (sum(x is not None for x in (self.device_id, self.device_id_type, self.core_index))
                + isinstance(self.inc, ir.Result))

    @classmethod
    def with_view(cls, view, *, dynamic, earlier=()):
        amounts = counts(dynamic=dynamic)
        if earlier:
            amounts |= st.sampled_from(earlier).map(ir.Result)
        return amounts.map(lambda inc: cls(view, inc))

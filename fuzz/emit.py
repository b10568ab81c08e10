"""One walk over a case's kernel, two backends: live JAX objects or Python source.

`emit_kernel` is the only place that knows how IR nodes map to Pallas calls;
`LiveKernel` makes it call JAX, `SourceKernel` makes it write the same calls as
text. So the live program and the rendered reproducer cannot drift apart.

The kernel's signature is ``kernel(dyn, out, *sems)``: ``dyn`` holds the
dynamic operands, ``out`` receives the reads, ``sems`` are the non-scoped
semaphores in declaration order; scoped ones are allocated inside with
``pl.run_scoped``.
"""
from __future__ import annotations

import itertools

from fuzz import ir


def allocation(sem: ir.Semaphore):
    """The Pallas allocation (scratch shape) that declares ``sem``."""
    import jax.numpy as jnp
    from jax.experimental.pallas import tpu as pltpu
    if sem.kind in ir.ARRAY_KINDS:
        return pltpu.VMEM(tuple(sem.shape), jnp.dtype(sem.kind))
    return getattr(pltpu.SemaphoreType, sem.kind.upper())(tuple(sem.shape))


def allocation_source(sem: ir.Semaphore) -> str:
    shape = repr(tuple(int(d) for d in sem.shape))
    if sem.kind in ir.ARRAY_KINDS:
        return f"pltpu.VMEM({shape}, jnp.{sem.kind})"
    return f"pltpu.SemaphoreType.{sem.kind.upper()}({shape})"


def emit_kernel(case: ir.Case, b) -> None:
    """Drive backend ``b`` through ``case``'s kernel body."""
    slots = itertools.count()
    reads = iter(range(case.num_reads))

    def operand(i: ir.Int):
        return b.dyn(next(slots)) if i.dynamic else b.lit(i.value)

    def index(idx: ir.Index):
        match idx:
            case ir.Int():
                return operand(idx)
            case ir.Slice():
                return b.slice(idx.start, idx.stop, idx.step)
            case ir.Ds():
                return b.ds(operand(idx.start), idx.size)
            case ir.IntArray() if idx.dynamic:
                first = next(slots)
                for _ in idx.values[1:]:
                    next(slots)
                return b.dyn_array(first, len(idx.values))
            case ir.IntArray():
                return b.int_array(idx.values)
            case ir.Ellipsis_():
                return b.ellipsis()

    def view(v: ir.View):
        x = b.sem(v.ref)
        for t in v.transforms:
            match t:
                case ir.At():
                    x = b.at(x, [index(i) for i in t.indices])
                case ir.Reshape():
                    x = b.reshape(x, t.shape)
                case ir.Bitcast():
                    x = b.bitcast(x, t.dtype)
                case ir.Transpose():
                    x = b.transpose(x, t.permutation)
        return x

    scoped = [i for i, s in enumerate(case.semaphores) if s.scoped]
    b.begin(scoped)
    for stmt in case.body:
        v = view(stmt.view)
        match stmt:
            case ir.Signal():
                kwargs = {}
                if stmt.device_id is not None:
                    kwargs["device_id"] = operand(stmt.device_id)
                if stmt.device_id_type is not None:
                    kwargs["device_id_type"] = b.device_id_type(stmt.device_id_type)
                if stmt.core_index is not None:
                    kwargs["core_index"] = operand(stmt.core_index)
                b.signal(v, operand(stmt.inc), kwargs)
            case ir.Wait():
                b.wait(v, operand(stmt.value), stmt.decrement)
            case ir.Read():
                b.read(v, next(reads))
    b.end()


class LiveKernel:
    """Backend that performs the calls on JAX refs (inside a trace)."""

    def __init__(self, case: ir.Case, dyn, out, sems):
        from jax.experimental import pallas as pl
        self.pl, self.case, self.dyn_ref, self.out = pl, case, dyn, out
        self.sems = dict(zip(
            [i for i, s in enumerate(case.semaphores) if not s.scoped], sems))
        self.body = []

    # Scoped semaphores exist only inside run_scoped, so statements are queued
    # and replayed there.
    def begin(self, scoped):
        self.scoped = scoped

    def end(self):
        import jax
        from fuzz import blame

        def run_statements(*scoped_refs):
            self.sems.update(zip(self.scoped, scoped_refs))
            # Each statement's equations carry its number (see fuzz/blame.py).
            for k, thunk in enumerate(self.body):
                with jax.named_scope(blame.SCOPE.format(k)):
                    thunk()
        if self.scoped:
            self.pl.run_scoped(run_statements, *[allocation(self.case.semaphores[i])
                                                 for i in self.scoped])
        else:
            run_statements()

    def dyn(self, slot):
        return lambda: self.dyn_ref[slot]

    def dyn_array(self, slot, length):
        return lambda: self.dyn_ref[self.pl.ds(slot, length)]

    def lit(self, value):
        return lambda: value

    def slice(self, start, stop, step):
        return lambda: slice(start, stop, step)

    def ds(self, start, size):
        return lambda: self.pl.ds(start(), size)

    def int_array(self, values):
        import numpy as np
        return lambda: np.array(values, dtype=np.int32)

    def ellipsis(self):
        return lambda: Ellipsis

    def sem(self, i):
        return lambda: self.sems[i]

    def at(self, x, indices):
        return lambda: x().at[tuple(i() for i in indices)]

    def reshape(self, x, shape):
        return lambda: x().reshape(tuple(shape))

    def bitcast(self, x, dtype):
        import jax.numpy as jnp
        return lambda: x().bitcast(jnp.dtype(dtype))

    def transpose(self, x, permutation):
        return lambda: x().transpose(tuple(permutation))

    def device_id_type(self, name):
        return lambda: getattr(self.pl.DeviceIdType, name.upper())

    def signal(self, v, inc, kwargs):
        self.body.append(lambda: self.pl.semaphore_signal(
            v(), inc(), **{k: f() for k, f in kwargs.items()}))

    def wait(self, v, value, decrement):
        self.body.append(lambda: self.pl.semaphore_wait(v(), value(), decrement=decrement))

    def read(self, v, slot):
        def do():
            self.out[slot] = self.pl.semaphore_read(v())
        self.body.append(do)


def live_kernel(case: ir.Case):
    """The kernel as a Python function of refs ``(dyn, out, *sems)``."""
    def kernel(dyn, out, *sems):
        emit_kernel(case, LiveKernel(case, dyn, out, sems))
    return kernel


class SourceKernel:
    """Backend that writes the same calls as Python source lines."""

    def __init__(self, case: ir.Case):
        self.case = case
        self.lines = []
        unscoped = [f"s{i}" for i, s in enumerate(case.semaphores) if not s.scoped]
        self.lines.append(f"def kernel({', '.join(['dyn', 'out', *unscoped])}):")
        self.indent = "    "

    def begin(self, scoped):
        self.scoped = scoped
        if scoped:
            self.lines.append(f"    def body({', '.join(f's{i}' for i in scoped)}):")
            self.indent = "        "

    def end(self):
        if len(self.lines) == 1 + bool(self.scoped):
            self.lines.append(self.indent + "pass")
        if self.scoped:
            allocs = ", ".join(allocation_source(self.case.semaphores[i])
                               for i in self.scoped)
            self.lines.append(f"    pl.run_scoped(body, {allocs})")

    def dyn(self, slot):
        return f"dyn[{slot}]"

    def dyn_array(self, slot, length):
        return f"dyn[pl.ds({slot}, {length})]"

    def lit(self, value):
        return repr(int(value))

    def slice(self, start, stop, step):
        parts = ["" if x is None else repr(int(x)) for x in (start, stop, step)]
        return ":".join(parts[:2]) + (f":{parts[2]}" if step is not None else "")

    def ds(self, start, size):
        return f"pl.ds({start}, {int(size)})"

    def int_array(self, values):
        return f"np.array({[int(v) for v in values]!r}, dtype=np.int32)"

    def ellipsis(self):
        return "..."

    def sem(self, i):
        return f"s{int(i)}"

    def at(self, x, indices):
        return f"{x}.at[{', '.join(indices) if indices else '()'}]"

    def reshape(self, x, shape):
        return f"{x}.reshape({tuple(int(d) for d in shape)!r})"

    def bitcast(self, x, dtype):
        return f"{x}.bitcast(jnp.{dtype})"

    def transpose(self, x, permutation):
        return f"{x}.transpose({tuple(int(p) for p in permutation)!r})"

    def device_id_type(self, name):
        return f"pl.DeviceIdType.{name.upper()}"

    def signal(self, v, inc, kwargs):
        extra = "".join(f", {k}={e}" for k, e in kwargs.items())
        self.lines.append(f"{self.indent}pl.semaphore_signal({v}, {inc}{extra})")

    def wait(self, v, value, decrement):
        self.lines.append(
            f"{self.indent}pl.semaphore_wait({v}, {value}, decrement={bool(decrement)})")

    def read(self, v, slot):
        self.lines.append(f"{self.indent}out[{int(slot)}] = pl.semaphore_read({v})")


def kernel_source(case: ir.Case) -> str:
    b = SourceKernel(case)
    emit_kernel(case, b)
    return "\n".join(b.lines) + "\n"

"""``mesh_kernel``: the `jax_refs` program (``jax.new_ref`` refs under
``jax.jit``), the kernel called through ``pl.kernel`` on a one-core
``pltpu.TensorCoreMesh`` with ``interpret=True`` and the refs passed in:
the ``mpmd_map`` discharge rule, which discharges a Pallas kernel run on a
mesh against refs it takes as arguments (``pallas_call``'s outputs are
fresh buffers instead). Only data programs: its semaphores would be
scratch, which this path does not allocate."""
from __future__ import annotations

from fuzz import ir
from fuzz.paths import jax_refs

NAME, COST, EVALUATES = "mesh_kernel", 3, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = ("in `pl.kernel(..., mesh=pltpu.TensorCoreMesh(...), interpret=True)` over "
         "`jax.new_ref` arrays")
CONTEXT = "pallas"   # pl.kernel runs the statements in a Pallas kernel
NEEDS = (*jax_refs.NEEDS, "pl.kernel", "pltpu.TensorCoreMesh")

_CALL = ("pl.kernel(kernel, out_type=(), mesh=pltpu.TensorCoreMesh(axis_name='core', "
         "num_cores=1), interpret=True)")


def not_applicable(case: ir.Case) -> str | None:
    return jax_refs.not_applicable(case)


def harness(case: ir.Case) -> str:
    return jax_refs.harness(case, call=_CALL)


results = jax_refs.results
model_results = jax_refs.model_results

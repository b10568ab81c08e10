"""``nested``: refs under ``jax.jit`` (``jax.new_ref``), closed over by a
``pl.pallas_call(interpret=True)`` kernel called inside a ``pl.run_state``
body. When jit lowers the program it discharges the run_state (its
discharge rule, for refs it closes over) and the pallas_call in it (the
``pallas_call`` rule, likewise): the two rules a plain kernel never reaches.
The refs pass an ``optimization_barrier`` first (its rule takes refs too;
JAX 0.10 has no discharge rule for it, so there they do not).
Only data programs: closed-over refs must be plain refs, and semaphores
exist only as kernel scratch."""
from __future__ import annotations

from fuzz import compat, ir, paths
from fuzz.paths import jax_refs

NAME, COST, EVALUATES = "nested", 3, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "in a `pl.pallas_call(..., interpret=True)` kernel inside `pl.run_state` under `jax.jit`"
CONTEXT = "pallas"   # the statements run in the pallas_call kernel
NEEDS = ("jax.new_ref", "jax.freeze")

_HARNESS = '''\
def program(dyn, {params}):
    refs = {barrier}[jax.new_ref(x) for x in ({params},)]{end}

    def pallas_kernel(d, out):
        out[...] = jnp.zeros(OUT, jnp.int32)   # no semaphore reads here
        kernel(d, out, *refs)                  # the data refs: closed over

    def body(state):
        dyn_ref, out_ref = state
        out_ref[...] = pl.pallas_call(
            pallas_kernel, out_shape=jax.ShapeDtypeStruct(OUT, jnp.int32),
            interpret=True)(dyn_ref[...])

    _, out = pl.run_state(body)((dyn, jnp.zeros(OUT, jnp.int32)))
    return (out, *[jax.freeze(r) for r in refs])


def function():
    """The program as a function, and its arguments."""
    return jax.jit(program), (DYN, {inputs})
'''


def not_applicable(case: ir.Case) -> str | None:
    return jax_refs.not_applicable(case)


def harness(case: ir.Case) -> str:
    barrier = any(p.name == "optimization_barrier" for p in compat.discharge_rules())
    return _HARNESS.format(**jax_refs.arguments(case),
                           barrier="jax.lax.optimization_barrier(" if barrier else "",
                           end=")" if barrier else "")


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    """``out`` too: the pallas_call's own result, returned so that it lives."""
    return [("out", ((paths.out_len(case),), "int32")), *jax_refs.results(case)]


def model_results(case: ir.Case, meaning) -> list | None:
    return [paths.padded_reads(case, meaning), *jax_refs.model_results(case, meaning)]

"""``jax_refs``: refs as values under ``jax.jit``, as JAX programs use state
outside Pallas: ``jax.new_ref`` of each input (``jax.empty_ref`` for
``out``, written before use), the kernel called through an inner
``jax.jit`` of a ``jax.checkpoint`` that take the refs (the ``jit`` and
``remat2`` discharge rules), then ``jax.freeze``. JAX discharges the
whole program when jit lowers it. Only data programs: semaphores exist only
in kernels."""
from __future__ import annotations

from fuzz import ir, paths

NAME, COST, EVALUATES = "jax_refs", 2, True
CONTEXT = "refs"   # refs as values under jax.jit, no Pallas kernel
PUBLIC_RANK = 2   # jax.new_ref under jax.jit: top-level JAX API
NEEDS = ("jax.new_ref", "jax.freeze", "jax.empty_ref")   # fuzz.compat features

_HARNESS = '''\
def program(dyn, {params}):
    refs = [jax.new_ref(x) for x in ({params},)]
{out}    {kernel}({dyn_ref}, {out_ref}, *refs)
    return ({out_result}, *[jax.freeze(r) for r in refs])


def function():
    """The program as a function, and its arguments."""
    return {program}, (DYN, {inputs})
'''

# Under jit ``out`` is a jax.empty_ref, written before use (eagerly that
# primitive has no evaluation rule).
_OUT_UNDER_JIT = """\
    out = jax.empty_ref(jax.ShapeDtypeStruct(OUT, jnp.int32))   # no contents until...
    out[...] = jnp.zeros(OUT, jnp.int32)                         # ...written here
"""
# Eagerly, a ref only where the kernel uses it: ``dyn`` where it has dynamic
# operands (it reads them), ``out`` never (only a semaphore read writes it,
# and semaphores exist only in kernels). Each jax.new_ref runs as it is
# made, and one made unread must not change what the program does
# (eager-jvp-of-integer-new-ref: of an int32 array, it did).
_UNUSED = "None"


def eager_body(case: ir.Case, values: dict[str, str], results: list[str]) -> str:
    """The eager program's body (`harness` with ``jit=False``) written out
    around the kernel: a ``jax.new_ref`` of each operand it uses (of
    ``values``: each parameter's source by name, ``dyn`` and ``x0``, ...),
    then ``jax.freeze`` of ``results`` (``out``, never written: zeros).
    The ``eager`` path's `paths.function_source`."""
    made = {**({"dyn": "dyn"} if case.dynamic_values else {}),
            **{f"r{i}": f"x{i}" for i in paths.unscoped(case)}}
    frozen = {"out": "jnp.zeros(OUT, jnp.int32)"}   # (never written: `_UNUSED`)
    return (f"    {', '.join(made)} = {', '.join(f'jax.new_ref({values[x]})' for x in made.values())}\n"
            + f"    kernel({'dyn' if case.dynamic_values else _UNUSED}, {_UNUSED}, "
            f"{', '.join(f'r{i}' for i in paths.unscoped(case))})\n"
            f"    return {paths.tuple_source(frozen.get(n, f'jax.freeze({n})') for n in results)}\n")


def not_applicable(case: ir.Case) -> str | None:
    if any(r.is_semaphore for r in case.refs) or any(s.counted() for s in case.statements):
        return "semaphores (and the copies counted on them) exist only inside Pallas kernels"
    if any(r.scoped for r in case.refs):
        return "pl.run_scoped exists only inside Pallas kernels"
    return None


def arguments(case: ir.Case) -> dict[str, str]:
    """The program's parameters for the refs' initial contents, and those contents."""
    refs = paths.unscoped(case)
    return {"params": ", ".join(f"x{i}" for i in refs),
            "inputs": "".join(f"{paths.initial_source(case, i)}, " for i in refs)}


def harness(case: ir.Case, *, jit: bool = True,
            call: str = "jax.jit(jax.checkpoint(kernel))") -> str:
    """The program under jit, the kernel called through ``call``; with
    ``jit=False`` the same program run eagerly (the ``eager`` path)."""
    if jit:
        return _HARNESS.format(**arguments(case), out=_OUT_UNDER_JIT, dyn_ref="jax.new_ref(dyn)",
                               out_ref="out", out_result="jax.freeze(out)",
                               kernel=call, program="jax.jit(program)")
    return _HARNESS.format(**arguments(case), out="",
                           dyn_ref="jax.new_ref(dyn)" if case.dynamic_values else _UNUSED,
                           out_ref=_UNUSED, out_result="jnp.zeros(OUT, jnp.int32)",
                           kernel="kernel", program="program")


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    return [("out", ((paths.out_len(case),), "int32")),
            *paths.ref_results(case, paths.unscoped(case))]


def model_results(case: ir.Case, meaning) -> list | None:
    return [paths.padded_reads(case, meaning), *[meaning.state[i] for i in paths.unscoped(case)]]

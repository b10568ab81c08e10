"""Render a case as a standalone Python script for one path.

The kernel comes from `emit.kernel_source` (the same walk as the live build);
this module only adds the few lines that run it the way `fuzz.paths` does.
The script prints one JSON line: the avals and values it produced, or the
error it raised, so a test can compare it with the live run.
"""
from __future__ import annotations

from fuzz import emit, ir, paths, serialize

_HEADER = '''\
# discharge-fuzz case (schema {schema}) on path `{path}`.
import json
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

DYN = jnp.array({dyn!r}, dtype=jnp.int32)  # dynamic operands, in body order
OUT = ({out},)  # one int32 slot per read

'''

_RUNNERS = {
    "run_state": '''\
def run():
    return pl.run_state(lambda refs: kernel(*refs))(
        (DYN, jnp.zeros(OUT, jnp.int32), {sems}))
''',
    "pallas_call": '''\
def run():
    call = pl.pallas_call(
        kernel, out_shape=jax.ShapeDtypeStruct(OUT, jnp.int32),
        scratch_shapes=[{scratch}], interpret=True)
    return (call(DYN),)
''',
    # No public API discharges without evaluating: this path uses JAX internals.
    "abstract": '''\
def run():
    from jax._src.state.discharge import discharge_state
    from jax._src.pallas.hlo_interpreter import resolve_physical_types
    from jax._src.state.types import AbstractRef
    from jax._src import core
    import inspect
    avals = [AbstractRef(core.ShapedArray(DYN.shape, jnp.int32)),
             AbstractRef(core.ShapedArray(OUT, jnp.int32)),
             {ref_avals}]
    closed = jax.make_jaxpr(kernel)(*avals)
    jaxpr, consts = resolve_physical_types(closed.jaxpr, closed.consts)
    if hasattr(core, "ClosedJaxpr"):  # JAX < 0.12
        physical = core.ClosedJaxpr(jaxpr, consts)
    else:
        physical = jaxpr.with_consts(consts) if consts else jaxpr
    strip = ({{"strip_memory_space": True}} if "strip_memory_space"  # JAX >= 0.12
             in inspect.signature(discharge_state).parameters else {{}})
    return tuple(jax.ShapeDtypeStruct(a.shape, a.dtype)
                 for a in discharge_state(physical, **strip).out_avals)
''',
}

_MAIN = '''
def main():
    try:
        results = run()
    except Exception as e:
        print(json.dumps({"error": type(e).__name__, "message": str(e).splitlines()[0]}))
        raise SystemExit(1)
    print(json.dumps({
        "avals": [[list(r.shape), str(jnp.dtype(r.dtype))] for r in results],
        "values": [np.asarray(r).tolist() for r in results if not isinstance(r, jax.ShapeDtypeStruct)],
    }))


if __name__ == "__main__":
    main()
'''


def render(case: ir.Case, path: str) -> str:
    """A standalone script that runs ``case`` on ``path``."""
    if path not in ir.PATHS:
        raise ValueError(f"unknown path {path!r}; known: {ir.PATHS}")
    if reason := paths.not_applicable(case, path):
        raise ValueError(f"cannot render for {path}: {reason}")
    unscoped = [s for s in case.semaphores if not s.scoped]
    header = _HEADER.format(
        schema=ir.SCHEMA_VERSION, path=path,
        dyn=list(case.dynamic_values or (0,)), out=max(case.num_reads, 1))
    runner = _RUNNERS[path].format(
        sems="".join(f"jnp.zeros({tuple(s.shape)!r}, jnp.{s.kind}), " for s in unscoped),
        scratch=", ".join(emit.allocation_source(s) for s in unscoped),
        ref_avals=", ".join(
            f"AbstractRef(core.ShapedArray({tuple(s.shape)!r}, jnp.{s.kind}))"
            if s.kind in ir.ARRAY_KINDS else f"{emit.allocation_source(s)}.get_ref_aval()"
            for s in unscoped))
    case_json = "\n".join("# " + line for line in serialize.dumps(case).splitlines())
    return (header + emit.kernel_source(case) + "\n\n" + runner + _MAIN
            + "\n# The case as JSON:\n" + case_json + "\n")

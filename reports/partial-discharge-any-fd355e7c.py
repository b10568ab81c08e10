# Reproducer for discharge-fuzz finding partial-discharge-any-fd355e7c.
# Runs the kernel below on the `abstract` path and compares the result with what
# a correct JAX gives. Exit status: 1 = the bug reproduces, 0 = it does not.
# NOTE: the `abstract` path discharges without evaluating, which only JAX
# internals (jax._src) can do: the failure lives there.
# discharge-fuzz case (schema 6) on path `abstract`.
import json
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as plgpu

X64 = False  # run() under enable_x64(X64): whether 64-bit dtypes exist
DYN = jnp.array([0], dtype=jnp.int32)  # dynamic operands, in body order
OUT = (1,)  # one int32 slot per semaphore read

def kernel(dyn, out, r0):
    def wrap0(dyn, r0):
        v1 = r0[dyn[0]]
    jax.shard_map(wrap0, mesh=jax.make_mesh((1,), ('i',)), in_specs=jax.sharding.PartitionSpec(), out_specs=jax.sharding.PartitionSpec())(dyn, r0)


from jax._src import core
from jax._src.state.discharge import discharge_state
from jax._src.state.types import AbstractRef


def trace():
    """The kernel traced over abstract refs."""
    avals = [AbstractRef(core.ShapedArray((1,), jnp.int32)),
             AbstractRef(core.ShapedArray(OUT, jnp.int32)),
             AbstractRef(core.ShapedArray((1,), jnp.int16))]
    return jax.make_jaxpr(kernel)(*avals)


def discharge(closed, should_discharge=True):
    """``closed`` discharged: the refs ``should_discharge`` selects."""
    return discharge_state(closed, should_discharge=should_discharge, strip_memory_space=True)


def run():
    return tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in discharge(trace()).out_avals)

def observe():
    """What running the kernel gives: its result avals and values, or the error."""
    try:
        with jax.enable_x64(X64):
            # (an error in a callback surfaces only when the results are ready)
            results = jax.block_until_ready(run())
    except Exception as e:
        return {"error": type(e).__name__, "message": str(e).strip().splitlines()[0] if str(e).strip() else "",
                "mro": [c.__name__ for c in type(e).__mro__], "text": str(e)}
    return {"avals": [[list(r.shape), str(jnp.dtype(r.dtype))] if hasattr(r, "shape")
                      else [[], "python " + type(r).__name__] for r in results],
            "values": [np.asarray(r).tolist() for r in results if not isinstance(r, jax.ShapeDtypeStruct)]}


EXPECTED_BY = 'discharging every ref'
ACTUAL_BY = 'discharging every ref but r0 (should_discharge)'
TOLERANCE = None  # numbers this close are equal (None: exactly)

MASK = [True, True, False]  # which of dyn, out, r... to discharge: all but r0
INITS = [DYN, np.zeros(OUT, np.int32), np.asarray([1], jnp.dtype('int16'))]


def traced():
    return jax.make_jaxpr(kernel)(*map(jax.new_ref, INITS))


def discharged(mask):
    """Each ref's final contents: those ``mask`` picks discharged, the rest new refs."""
    # (under jit: Pallas' masked loads and stores have no eager rule on a Ref)
    args = [x if m else jax.new_ref(x) for x, m in zip(INITS, mask)]
    got = iter(jax.jit(core.jaxpr_as_fun(discharge(traced(), should_discharge=mask)))(*args))
    return [np.asarray(next(got) if m else a[...]).tolist() for a, m in zip(args, mask)]


def expected():
    return discharged([True] * len(INITS))


def actual():
    return discharged(MASK)


def nan_same(x):
    """``x`` (results: arrays, or lists, tuples and dicts of them) as plain
    lists, each NaN the string "nan": a NaN is the same value as any other
    NaN (a bitcast view may make one, and which NaN bits XLA keeps, JAX
    does not say). Reproducers compare their two sides with it too."""
    if hasattr(x, "tolist") and not isinstance(x, (bool, int, float)):
        x = x.tolist()
    if isinstance(x, dict):
        return {k: nan_same(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [nan_same(v) for v in x]
    return "nan" if isinstance(x, float) and x != x else x


def main():
    error = None
    with jax.enable_x64(X64):
        want = expected()
        try:
            got = actual()
        except Exception as e:   # the side that raises shows the bug too
            error = type(e).__name__
            got = f"raises {error}: " + (str(e).strip().splitlines() or [""])[0]
    print(f"actual:   by {ACTUAL_BY}: {got}")
    print(f"expected: by {EXPECTED_BY}: {want}")
    if TOLERANCE is None or isinstance(got, str):
        bug = nan_same(got) != nan_same(want)
    else:   # (np.allclose of each pair of results)
        bug = len(got) != len(want) or not all(
            np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE,
                                                       equal_nan=True)
            for a, b in zip(got, want))
    print(f"BUG: {ACTUAL_BY} differs from {EXPECTED_BY}" if bug else "OK: JAX behaves as expected")
    print(json.dumps({"reproduced": bug, "error": error}))
    raise SystemExit(1 if bug else 0)


if __name__ == "__main__":
    main()

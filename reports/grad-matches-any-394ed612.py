# Reproducer for discharge-fuzz finding grad-matches-any-394ed612.
# Runs the kernel below on the `eager` path and compares the result with what
# a correct JAX gives. Exit status: 1 = the bug reproduces, 0 = it does not.
# discharge-fuzz case (schema 6) on path `eager`.
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
    v0 = r0[dyn[0], np.array([0], dtype=np.int32)]

def program(dyn, x0):
    dyn, r0 = jax.new_ref(dyn), jax.new_ref(x0)
    kernel(dyn, None, r0)
    return jax.freeze(r0),

def function():
    """The program as a function, and its arguments."""
    return program, (DYN, jnp.asarray([[1.0]], jnp.float32), )

def run():
    f, args = function()
    return f(*args)

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


EXPECTED_BY = 'jax.jvp'
ACTUAL_BY = 'jax.vjp'
TOLERANCE = 0.002  # numbers this close are equal (None: exactly)
@jax.jit
def of_floats(x0):
    dyn, r0 = jax.new_ref(DYN), jax.new_ref(x0)
    kernel(dyn, None, r0)
    return jax.freeze(r0),
X = (jnp.asarray([[1.0]], jnp.float32),)  # the float refs' initial contents


def expected():
    return [float(sum(jnp.sum(t) for t in jax.jvp(of_floats, X, tuple(jnp.ones_like(x) for x in X))[1]))]


def actual():
    return [float(sum(jnp.sum(g) for g in jax.vjp(of_floats, *X)[1](tuple(jnp.ones_like(y) for y in of_floats(*X)))))]


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

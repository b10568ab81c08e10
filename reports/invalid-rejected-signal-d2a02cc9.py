# Reproducer for discharge-fuzz finding invalid-rejected-signal-d2a02cc9.
# Runs the kernel below on the `pallas_call` path and compares the result with what
# a correct JAX gives. Exit status: 1 = the bug reproduces, 0 = it does not.
# discharge-fuzz case (schema 6) on path `pallas_call`.
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
    pl.semaphore_signal(r0.bitcast(jnp.int16).at[0], 0)

def pallas_kernel(out, r0):
    out[...] = jnp.zeros(out.shape, jnp.int32)
    kernel(None, out, r0, )


def function():
    """The program as a function, and its arguments."""
    call = pl.pallas_call(
        pallas_kernel, interpret=True,
        out_shape=(jax.ShapeDtypeStruct(OUT, jnp.int32), ),
        scratch_shapes=[pltpu.SemaphoreType.REGULAR((1,))])
    return call, ()

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

import re
EXPECTED = json.loads('{"error_types": ["NotImplementedError", "ValueError"], "match": "(?i)bitcast"}')
EXPECTED_TEXT = "NotImplementedError or ValueError with a message matching '(?i)bitcast' (from semaphore_signal)"


def problem(actual):
    """Why ``actual`` is not what a correct JAX gives, or None."""
    if "error_types" in EXPECTED:
        if "error" not in actual:
            return "no error was raised"
        if not set(actual["mro"]) & set(EXPECTED["error_types"]):
            return f"raised {actual['error']}, not " + " or ".join(EXPECTED["error_types"])
        if not re.search(EXPECTED["match"], actual["text"]):
            return f"the error message does not match {EXPECTED['match']!r}"
        return None
    if "error" in actual:
        return f"raised {actual['error']}: {actual['message']}"
    if actual["avals"] != EXPECTED["avals"]:
        return f"results have avals {actual['avals']}, expected {EXPECTED['avals']}"
    if "values" in EXPECTED and (len(actual["values"]) != len(EXPECTED["values"]) or any(
            w is not None and a != w for a, w in zip(actual["values"], EXPECTED["values"]))):
        return (f"results are {actual['values']}, expected {EXPECTED['values']}"
                + (" (None: not predicted)" if None in EXPECTED["values"] else ""))
    return None


def main():
    actual = observe()
    if "error" in actual:
        print(f"actual:   {actual['error']}: {actual['message']}")
    else:
        print(f"actual:   results with avals {actual['avals']}"
              + (f" and values {actual['values']}" if actual["values"] else ""))
    print(f"expected: {EXPECTED_TEXT}")
    why = problem(actual)
    print(f"BUG: {why}" if why else "OK: JAX behaves as expected")
    print(json.dumps({"reproduced": why is not None, "error": actual.get("error")}))
    raise SystemExit(1 if why else 0)


if __name__ == "__main__":
    main()

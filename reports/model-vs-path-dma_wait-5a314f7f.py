# Reproducer for discharge-fuzz finding model-vs-path-dma_wait-5a314f7f.
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

def kernel(dyn, out, r0, r1, r2):
    pltpu.make_async_copy(r0, r1, r2, src_sem=r2).start()
    pltpu.make_async_copy(r0, r1, r2, src_sem=r2).wait()
    v2 = pl.semaphore_read(r2)
    out[0] = v2

def pallas_kernel(x0, x1, out, r0, r1, r2):
    out[...] = jnp.zeros(out.shape, jnp.int32); r0[...] = x0[...]; r1[...] = x1[...]
    kernel(None, out, r0, r1, r2, )


def function():
    """The program as a function, and its arguments."""
    call = pl.pallas_call(
        pallas_kernel, interpret=True,
        out_shape=(jax.ShapeDtypeStruct(OUT, jnp.int32), jax.ShapeDtypeStruct((2,), jnp.float32), jax.ShapeDtypeStruct((2,), jnp.float32), ),
        scratch_shapes=[pltpu.SemaphoreType.DMA(())])
    return call, (jnp.asarray([1.0, 2.0], jnp.float32), jnp.asarray([2.0, 3.0], jnp.float32), )

def run():
    f, args = function()
    return f(*args)


def first_line(e: BaseException) -> str:
    """``Type: first line of the message``: how an error is named in messages.
    An error that carries a Python traceback (a failed callback) is named by
    the error at the end of it, which says what went wrong."""
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    if "Traceback (most recent call last)" in first:
        first = first.split("Traceback")[0] + text[-1].strip()
    return f"{type(e).__name__}: {first}"[:300]


def observe():
    """What running the kernel gives: its result avals and values, or the error."""
    try:
        with jax.enable_x64(X64):
            # (an error in a callback surfaces only when the results are ready)
            results = jax.block_until_ready(run())
    except Exception as e:
        return {"error": type(e).__name__, "message": first_line(e).partition(": ")[2],
                "mro": [c.__name__ for c in type(e).__mro__], "text": str(e)}
    return {"avals": [[list(r.shape), str(jnp.dtype(r.dtype))] if hasattr(r, "shape")
                      else [[], "python " + type(r).__name__] for r in results],
            "values": [np.asarray(r).tolist() for r in results if not isinstance(r, jax.ShapeDtypeStruct)]}

import re
EXPECTED = json.loads('{"avals": [[[1], "int32"], [[2], "float32"], [[2], "float32"]], "values": [[0], [1.0, 2.0], [1.0, 2.0]]}')
EXPECTED_TEXT = "no error; results with avals [[[1], 'int32'], [[2], 'float32'], [[2], 'float32']] and values [[0], [1.0, 2.0], [1.0, 2.0]]"


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

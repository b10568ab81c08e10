# Reproducer for discharge-fuzz finding valid-runs-any-b39f298a.
# Runs the kernel below on the `tpu_interpret` path and compares the result with what
# a correct JAX gives. Exit status: 1 = the bug reproduces, 0 = it does not.
# discharge-fuzz case (schema 6) on path `tpu_interpret`.
import json
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu
from jax.experimental.pallas import triton as plgpu
# the mesh's devices, asked for before JAX starts (a process that has them keeps its own)
if jax.config.jax_num_cpu_devices < 2: jax.config.update("jax_num_cpu_devices", 2)

X64 = True  # run() under enable_x64(X64): whether 64-bit dtypes exist
DYN = jnp.array([0], dtype=jnp.int32)  # dynamic operands, in body order
OUT = (1,)  # one int32 slot per semaphore read

def kernel(dyn, out, r0, r1, r2, r3, r4):
    pl.semaphore_signal(r4, 0, device_id={'x': (jax.lax.axis_index('x') + -1) % 2})
    pl.semaphore_wait(r4, 0)
    pltpu.make_async_remote_copy(r0, r1, r2, r3, device_id={'x': (jax.lax.axis_index('x') + 1) % 2}).start()
    pltpu.make_async_remote_copy(r0, r1, r2, r3, device_id={'x': (jax.lax.axis_index('x') + 1) % 2}).wait()

def pallas_kernel(x0, x1, r0, r1, r2, r3, r4):
    r0[...] = x0[...]; r1[...] = x1[...]
    kernel(None, None, r0, r1, r2, r3, r4, )


def function():
    """The program as a function, and its arguments."""
    call = pl.pallas_call(
        pallas_kernel, interpret=pltpu.InterpretParams(),
        out_shape=(jax.ShapeDtypeStruct((2,), jnp.int64), jax.ShapeDtypeStruct((2,), jnp.int64), ),
        scratch_shapes=[pltpu.SemaphoreType.DMA(()), pltpu.SemaphoreType.DMA(()), pltpu.SemaphoreType.BARRIER(())])
    return on_mesh(call), (jnp.asarray([[1, 2], [3, 4]], jnp.int64), jnp.asarray([[2, 3], [4, 5]], jnp.int64), )


def on_mesh(call, P=jax.sharding.PartitionSpec):
    """``call`` on each device of a mesh of 2, on its block of each operand."""
    return jax.shard_map(lambda *blocks: tuple(y[None] for y in call(*(b[0] for b in blocks))), mesh=jax.sharding.Mesh(jax.devices()[:2], 'x'), in_specs=P('x'), out_specs=P('x'), check_vma=False)

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
EXPECTED = json.loads('{"avals": [[[2, 2], "int64"], [[2, 2], "int64"]]}')
EXPECTED_TEXT = "no error; results with avals [[[2, 2], 'int64'], [[2, 2], 'int64']]"


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

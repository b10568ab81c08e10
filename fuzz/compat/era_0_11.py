"""JAX 0.11.0 to 0.12.x, on Python 3.12: ``pltpu.TensorCoreMesh`` on a CPU
(0.11.0), discharge rules called with a ``DischargeContext`` (0.11.2, an
internal change `fuzz.compat` detects), and local copies with a source
semaphore and ``.wait_read()`` / ``.wait_write()`` (0.12.0)."""
FIRST = (0, 11, 0)

ADDED = {
    "pltpu.TensorCoreMesh": (0, 11, 0),
    "pltpu.make_async_copy(src_sem=)": (0, 12, 0),
    "jax._src.pallas.mosaic.primitives.AsyncCopyDescriptor.wait_write": (0, 12, 0),
    # custom_vmap flattens its arguments for tracing: it takes a ref view
    # (before: "TransformedRefs cannot be abstractified").
    "jax._src.custom_batching.tracing_registry": (0, 11, 2),
}
GONE: dict = {}

ENABLE_X64 = "jax.enable_x64"

"""JAX 0.9.0 to 0.10.x: ``jax.experimental.enable_x64`` is gone;
``jax.empty_ref`` (0.9.1) and the ``emit_pipeline`` primitive behind
``jax_use_emit_pipeline_primitive`` (0.10.2) arrive."""
FIRST = (0, 9, 0)

ADDED = {
    "jax.empty_ref": (0, 9, 1),
    "jax._src.config.use_emit_pipeline_primitive": (0, 10, 2),
}
GONE = {"jax.experimental.enable_x64": (0, 9, 0)}

ENABLE_X64 = "jax.enable_x64"

"""JAX 0.9.0 to 0.10.x: ``jax.experimental.enable_x64`` is gone;
``jax.empty_ref`` (0.9.1), the abstract TPU device a CPU traces a pipeline
for (0.10.1) and the ``emit_pipeline`` primitive behind
``jax_use_emit_pipeline_primitive`` (0.10.2) arrive."""
FIRST = (0, 9, 0)

ADDED = {
    "jax.empty_ref": (0, 9, 1),
    "jax._src.config.use_emit_pipeline_primitive": (0, 10, 2),
    # AbstractDevice(kind, num_cores, platform), which lets a CPU trace a TPU
    # pipeline (before: "takes 3 positional arguments but 4 were given").
    "jax.sharding.AbstractDevice(platform)": (0, 10, 1),
    # A ref view (TransformedRef) registered for tracing: jax.jit,
    # jax.checkpoint and jax.shard_map take one as an argument (before:
    # "Error interpreting a TransformedRef argument", "TransformedRefs are
    # not allowed").
    "jax._src.state.types.tracing_registry": (0, 10, 0),
}
GONE = {"jax.experimental.enable_x64": (0, 9, 0)}

ENABLE_X64 = "jax.enable_x64"

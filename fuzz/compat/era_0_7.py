"""JAX 0.7.2 to 0.8.x: ``pl.semaphore_wait(sem, value, decrement=...)``,
``jax.new_ref`` and the abstract meshes that trace a TPU pipeline on a
CPU; ``jax.enable_x64`` joins ``jax.experimental.enable_x64`` in 0.8.0."""
FIRST = (0, 7, 2)

ADDED = {
    "pl.semaphore_wait(decrement=)": (0, 7, 2),
    "jax._src.state.types.TransformedRef.transpose": (0, 7, 2),   # x.transpose(...) of a ref
    "jax.new_ref": (0, 7, 2),
    "jax.sharding.use_abstract_mesh": (0, 7, 2),
    "jax.sharding.AbstractDevice": (0, 7, 2),
    "jax.enable_x64": (0, 8, 0),
    "jax.freeze": (0, 8, 0),
    "pl.kernel": (0, 8, 1),
    # A copy that adds into its destination (start(add=True), async_copy(add=True)).
    "jax._src.pallas.mosaic.primitives.AsyncCopyDescriptor.start(add=)": (0, 8, 1),
    # The TPU interpreter takes a device id in mesh form as a dict ({axis: i})
    # from 0.8.2 (before: TypeError "unsupported operand type(s) for *: 'dict'
    # and 'int'"), as Mosaic does from 0.7.1; a tuple of coordinates works on all.
    "jax._src.pallas.mosaic.interpret.utils.device_coords_to_logical_id": (0, 8, 2),
}
GONE: dict = {}

ENABLE_X64 = "jax.experimental.enable_x64"   # 0.7.2 has no jax.enable_x64

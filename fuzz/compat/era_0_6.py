"""JAX 0.6.2 to 0.7.1: the floor.

0.6.2 is the first release with ``pl.semaphore_signal``, ``pl.run_state`` and
``pltpu.InterpretParams`` together (0.6.0 and 0.6.1 have no
``InterpretParams``), so the first on which every semaphore program has a
discharge path and an independent interpreter to compare it with.

In these releases ``pl.semaphore_wait(sem, dec)`` takes the amount
positionally and has no ``decrement=``; 64-bit mode is only
``jax.experimental.enable_x64``.
"""
FIRST = (0, 6, 2)

# API a rendered program may use -> the first release that has it. A
# feature is named as a program spells it: a dotted name, or a call with
# the keyword it needs (tests/test_releases.py probes each on real installs).
ADDED = {
    "pl.semaphore_signal": (0, 6, 2),
    "pl.run_state": (0, 6, 2),
    "pltpu.InterpretParams": (0, 6, 2),
    "jax.shard_map": (0, 6, 2),
    "jax.experimental.enable_x64": (0, 6, 2),
    "pltpu.reset_tpu_interpret_mode_state": (0, 7, 0),
    "jax._src.state.types.AbstractRef(memory_space=)": (0, 7, 0),
    "jax.ref.get": (0, 7, 1),
    "jax.ref.swap": (0, 7, 1),
    "jax.ref.addupdate": (0, 7, 1),
    "pltpu.load": (0, 7, 1),
    "pltpu.store": (0, 7, 1),
    "plgpu.load": (0, 7, 1),
}
GONE: dict = {}   # feature -> the first release without it

ENABLE_X64 = "jax.experimental.enable_x64"

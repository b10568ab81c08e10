"""Bugs planted in campaign workers (``--worker-setup campaign_plants:NAME``):
each patches a real JAX discharge rule in the worker process, the way
tests/test_planted.py does in the test process."""
import os
import time

from fuzz import compat

signal_p, wait_p, _ = compat.SEMAPHORE_PRIMITIVES


def _patch(prim, around):
    rules = compat.discharge_rules()
    rules[prim] = compat.wrap_rule(rules[prim], around)


def _ref_rank(in_avals) -> int:
    return len(in_avals[0].inner_aval.shape)


def _first_time(name) -> bool:
    """True once per campaign (a marker file in $CAMPAIGN_PLANTS_DIR), so a
    planted crash does not take up the whole of a short campaign."""
    try:
        os.close(os.open(os.path.join(os.environ["CAMPAIGN_PLANTS_DIR"], name),
                         os.O_CREAT | os.O_EXCL))
        return True
    except FileExistsError:
        return False


def signal_adds_an_axis():
    """signal stores its new value with an extra leading axis (seed invariant)."""
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        return [None if v is None else v[None] for v in new_invals], outs
    _patch(signal_p, around)


def abort_on_rank2_signal():
    """A native crash: SIGABRT the first time a rank-2 semaphore is signalled."""
    def around(call, in_avals, values, params):
        if _ref_rank(in_avals) >= 2 and _first_time("abort"):
            os.abort()
        return call()
    _patch(signal_p, around)


def hang_on_rank2_wait():
    """A hang: the first wait on a rank-2 semaphore never returns."""
    def around(call, in_avals, values, params):
        if _ref_rank(in_avals) >= 2 and _first_time("hang"):
            time.sleep(3600)
        return call()
    _patch(wait_p, around)


def three_bugs():
    """Three wrong discharge rules of different rarity, each leaving its own
    dtype in the strict oracle's message (for the mode benchmark):
    signal -> float32 always, wait -> uint8 on rank >= 2, read -> float16 on rank >= 3."""
    import jax.numpy as jnp
    _, _, read_p = compat.SEMAPHORE_PRIMITIVES

    def changing(dtype, min_rank):
        def around(call, in_avals, values, params):
            new_invals, outs = call()
            if _ref_rank(in_avals) < min_rank:
                return new_invals, outs
            first = values[0] if new_invals[0] is None else new_invals[0]
            return [first.astype(dtype), *new_invals[1:]], outs
        return around
    _patch(signal_p, changing(jnp.float32, 0))
    _patch(wait_p, changing(jnp.uint8, 2))
    _patch(read_p, changing(jnp.float16, 3))


def bloat_on_read():
    """Runaway memory: the first read of a semaphore array holds 1 GB (any
    rank but 0: reads of rank-2 ones come too late in the 20-second
    campaign of the crash test, whose other plants take rank 2)."""
    import numpy as np

    def around(call, in_avals, values, params):
        if _ref_rank(in_avals) >= 1 and _first_time("bloat"):
            held = np.ones(125_000_000)   # 1 GB, written, so resident
            time.sleep(20)
            del held
        return call()
    _, _, read_p = compat.SEMAPHORE_PRIMITIVES
    _patch(read_p, around)

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


def abort_on_signal():
    """A native crash: SIGABRT the first time a semaphore is signalled.
    Each of the crash test's three plants fires on the first of a common,
    different event, so all three fire in a short campaign whatever order
    the restarted workers draw in."""
    def around(call, in_avals, values, params):
        if _first_time("abort"):
            os.abort()
        return call()
    _patch(signal_p, around)


def hang_on_wait():
    """A hang: the first semaphore wait never returns."""
    def around(call, in_avals, values, params):
        if _first_time("hang"):
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


def bloat_on_get():
    """Runaway memory: the first load from a data ref holds 1 GB."""
    import numpy as np
    from jax._src.state import primitives as state_primitives

    def around(call, in_avals, values, params):
        if _first_time("bloat"):
            held = np.ones(125_000_000)   # 1 GB, written, so resident
            time.sleep(20)
            del held
        return call()
    _patch(state_primitives.get_p, around)


def ignore_semaphore_transforms_from_0_12():
    """`_transform_semaphore` ignores a view's transforms, on JAX 0.12 and
    later only: a regression in 0.12 for `discharge-fuzz bisect --setup`
    to find (tests/test_releases.py)."""
    if compat.jax_version()[:2] >= (0, 12):
        module, name = compat.TRANSFORM_SEMAPHORE
        setattr(module, name, lambda value, transforms, aval: value)


def ignore_semaphore_transforms_from_threefry4x32():
    """The same bug, from the JAX commit that added
    jax/_src/random/threefry4x32.py on (5923cd99de, between 0.10.1 and
    0.10.2): a regression for `bisect --jax-repo` to pin to that commit."""
    import importlib.util
    try:
        there = importlib.util.find_spec("jax._src.random.threefry4x32") is not None
    except ModuleNotFoundError:   # before it, jax._src.random is a module, not a package
        there = False
    if there:
        module, name = compat.TRANSFORM_SEMAPHORE
        setattr(module, name, lambda value, transforms, aval: value)


def fix_64_bit_tiling():
    """Not a bug, a fix: the tiling of a 64-bit dtype (packing 4 // 8 == 0,
    which `_get_tiling_factor` doubles forever) taken as a 32-bit one's."""
    from jax._src import tpu_info
    real = tpu_info._get_tiling_factor
    tpu_info._get_tiling_factor = lambda src, max_tiling, packing: real(src, max_tiling,
                                                                         max(packing, 1))


def hang_on_a_wait_of_7_then_lose_a_signal_of_9():
    """Two bugs only the corpus replay's cases have (refs of shape (7,) and
    (9,), which no strategy draws first): the wait hangs, once; the signal
    stores with an extra axis."""
    def hang(call, in_avals, values, params):
        if in_avals[0].inner_aval.shape == (7,) and _first_time("hang7"):
            time.sleep(3600)
        return call()

    def extra_axis(call, in_avals, values, params):
        new_invals, outs = call()
        if in_avals[0].inner_aval.shape != (9,):
            return new_invals, outs
        return [None if v is None else v[None] for v in new_invals], outs
    _patch(wait_p, hang)
    _patch(signal_p, extra_axis)


def sleep_in_every_case():
    """Every case takes an hour: the worker says it is in one (an empty file
    ``in-a-case-PID`` in $CAMPAIGN_PLANTS_DIR), then sleeps, never back
    between cases (for the test that its supervisor's death kills it)."""
    from fuzz.campaign import property as prop

    def check_property(case, *args, **kwargs):
        here = os.path.join(os.environ["CAMPAIGN_PLANTS_DIR"], f"in-a-case-{os.getpid()}")
        open(here, "w").close()
        time.sleep(3600)
    prop.check_property = check_property


# One wrong-value bug per family, for the planted-bug benchmark
# (`python -m fuzz.bench_campaign planted`): the discharge rule's first new
# ref value comes back off by one, as a plausible slip in a rule would.

def _off_by_one(prim_name):
    import jax.numpy as jnp
    prim = next(p for p in compat.discharge_rules() if p.name == prim_name)

    def around(call, in_avals, values, params):
        new_invals, outs = call()
        k = next((k for k, v in enumerate(new_invals) if v is not None), None)
        if k is None:
            return new_invals, outs
        v = jnp.asarray(new_invals[k])
        wrong = jnp.logical_not(v) if v.dtype == jnp.bool_ else v + jnp.ones((), v.dtype)
        return [*new_invals[:k], wrong, *new_invals[k + 1:]], outs
    _patch(prim, around)


def ref_swap_off_by_one():
    """ref family: a store (swap) writes its value plus one."""
    _off_by_one("swap")


def semaphore_signal_off_by_one():
    """semaphore family: a signal counts one more than it should."""
    _off_by_one("semaphore_signal")


def dma_start_off_by_one():
    """dma family: a copy's first new value (its destination or a count) is off by one."""
    _off_by_one("dma_start")


def control_cond_off_by_one():
    """control family: a cond hands back its first updated ref off by one."""
    _off_by_one("cond")


def remat_off_by_one():
    """jax.checkpoint's discharge (remat2) hands back its first updated ref
    off by one: a bug only a program through jax.checkpoint shows."""
    _off_by_one("remat2")


FAMILY_PLANTS = {"ref": "ref_swap_off_by_one", "semaphore": "semaphore_signal_off_by_one",
                 "dma": "dma_start_off_by_one", "control": "control_cond_off_by_one"}


def semaphore_signal_to_the_next_element():
    """A signal lands on the next element of its semaphore array (a
    wrong-value bug with many faces: wrong reads, waits, final counts)."""
    import jax.numpy as jnp

    def around(call, in_avals, values, params):
        new_invals, outs = call()
        new, old = new_invals[0], values[0]
        if new is None:
            return new_invals, outs
        delta = (new - old).reshape(-1)
        return [old + jnp.roll(delta, 1).reshape(old.shape), *new_invals[1:]], outs
    _patch(signal_p, around)


def semaphore_signal_not_implemented():
    """A signal's discharge raises NotImplementedError (an exception with
    many faces: every program that signals, valid or not)."""
    def around(call, in_avals, values, params):
        raise NotImplementedError("planted: signal")
    _patch(signal_p, around)


# One bug each, of many faces: how many reports a campaign files for it.
MANY_FACED = ("semaphore_signal_to_the_next_element", "semaphore_signal_off_by_one",
              "semaphore_signal_not_implemented")

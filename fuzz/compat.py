"""The differences between JAX releases that the fuzzer touches, in one place.

Supported: JAX 0.10.x (Python 3.11) and 0.12.x (Python 3.12).
- ``discharge_state`` takes a ``ClosedJaxpr`` (0.10) or a closed ``Jaxpr``
  (0.12, which has no ``ClosedJaxpr``): the abstract path's harness
  (fuzz/paths/abstract.py) handles both, as its reproducers must.
- Discharge rules are ``rule(in_avals, out_avals, *args, **params)`` in 0.10
  and ``rule(ctx, *args, **params)`` with ``ctx.in_avals`` in 0.12.
"""
from __future__ import annotations

import functools

import jax
from jax._src import core as jax_core
from jax._src.interpreters import ad, batching
from jax._src.pallas import primitives as pallas_primitives
from jax._src.state import discharge as state_discharge
from jax._src.state import primitives as state_primitives

SUPPORTED = ((0, 10), (0, 12))
RULES_TAKE_CTX = hasattr(state_discharge, "DischargeContext")


class UnsupportedJax(RuntimeError):
    pass


def jax_version() -> tuple[int, ...]:
    return tuple(int(p) for p in jax.__version__.split(".")[:3] if p.isdigit())


def check_version() -> None:
    """Raise UnsupportedJax for a JAX release the compat layer does not know."""
    if jax_version()[:2] not in SUPPORTED:
        raise UnsupportedJax(
            f"JAX {jax.__version__} is not supported (known: "
            f"{', '.join('%d.%d.x' % v for v in SUPPORTED)})")


def discharge_rules() -> dict:
    """JAX's registry primitive -> discharge rule (read at call time by JAX)."""
    return state_discharge._discharge_rules


@functools.cache
def has_discharge_rule(primitive: str) -> bool:
    """Whether this release registers a discharge rule for the primitive
    named ``primitive`` (custom_vmap_call has none before 0.12)."""
    return any(str(p) == primitive for p in discharge_rules())


# Where JAX looks up a primitive's transformation rules when it traces, by
# kind, each table before the one it falls back to. 0.12 keeps get, swap and
# addupdate's batchers and transposes in the "fancy" tables (its
# primitive_batchers is a write-only proxy, not a dict).
_TRANSFORMATION_TABLES = {
    "batch": (batching, ("fancy_primitive_batchers", "primitive_batchers")),
    "jvp": (ad, ("primitive_jvps",)),
    "transpose": (ad, ("fancy_transposes", "primitive_transposes")),
}


def transformation_rules() -> dict[str, tuple[dict, jax_core.Primitive]]:
    """The batching, JVP and transpose rules this release registers for get,
    swap and addupdate: e.g. "get:batch" -> (the table JAX finds it in, the
    primitive: its key there)."""
    found = {}
    for prim in (state_primitives.get_p, state_primitives.swap_p, state_primitives.addupdate_p):
        for kind, (module, names) in _TRANSFORMATION_TABLES.items():
            tables = [t for t in (getattr(module, n, None) for n in names)
                      if isinstance(t, dict) and prim in t]
            if tables:
                found[f"{prim.name}:{kind}"] = (tables[0], prim)
    return found


def wrap_rule(rule, around):
    """A rule with JAX's calling convention that calls
    ``around(rule_call, in_avals, values, params)``, where ``rule_call()``
    invokes the original rule and ``values`` are the primitive's operands."""
    if RULES_TAKE_CTX:
        def wrapped(ctx, *args, **params):
            return around(lambda: rule(ctx, *args, **params), ctx.in_avals, args, params)
    else:
        # Positional only: a primitive may have a param named out_avals
        # (pallas_call on 0.10 has).
        def wrapped(*args, **params):
            return around(lambda: rule(*args, **params), args[0], args[2:], params)
    wrapped.__wrapped__ = rule
    return wrapped


def rule_operands(args):
    """Split a rule's positional arguments into (in_avals, values)."""
    if RULES_TAKE_CTX:
        return args[0].in_avals, args[1:]
    return args[0], args[2:]


def effect_input(effect):
    """The operand position a ref effect of an abstract evaluation names
    (``input``; ``input_index`` in older releases; None for other effects)."""
    return getattr(effect, "input", getattr(effect, "input_index", None))


def eval_closed(closed_jaxpr, *args):
    """Evaluate a closed jaxpr (either release's kind) on ``args``."""
    return jax_core.eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *args)


TRANSFORM_SEMAPHORE = (pallas_primitives, "_transform_semaphore")
SEMAPHORE_PRIMITIVES = (pallas_primitives.semaphore_signal_p,
                        pallas_primitives.semaphore_wait_p,
                        pallas_primitives.semaphore_read_p)


def has_interpret_option(name: str) -> bool:
    """Whether this release's ``pltpu.InterpretParams`` takes option ``name``."""
    import dataclasses
    from jax.experimental.pallas import tpu as pltpu
    return name in {f.name for f in dataclasses.fields(pltpu.InterpretParams)}


def tpu_races_found() -> bool | None:
    """Whether the TPU interpreter's race detector saw a race in the last
    run with ``detect_races=True`` (None: this release keeps no such record)."""
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as ipc
    races = getattr(ipc, "races", None)
    return None if races is None else bool(races.races_found)


@functools.cache
def dma_features() -> frozenset[str]:
    """What this release's local copies take beyond ``make_async_copy(src,
    dst, sem).start()`` / ``.wait()``: "src_sem" (a semaphore for the read,
    0.12) and "wait_read_write" (``.wait_read()`` / ``.wait_write()``, 0.12)."""
    import inspect
    from jax.experimental.pallas import tpu as pltpu
    from jax._src.pallas.mosaic import primitives as tpu_primitives
    found = set()
    if "src_sem" in inspect.signature(pltpu.make_async_copy).parameters:
        found.add("src_sem")
    if hasattr(tpu_primitives.AsyncCopyDescriptor, "wait_write"):
        found.add("wait_read_write")
    return frozenset(found)

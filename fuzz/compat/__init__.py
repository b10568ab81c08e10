"""The differences between JAX releases that the fuzzer touches, in one place.

Supported: every release from 0.6.2 (`FLOOR`, see `era_0_6`) to 0.12.x;
Python 3.11 up to 0.10.x, 3.12 from 0.11.0.

- Public API, as rendered programs spell it: one module per era
  (`era_0_6`, `era_0_7`, `era_0_9`, `era_0_11`), each naming the features
  that arrive (or go) in its releases and how what changed is spelled.
  `has`, `lacking` and `ENABLE_X64` answer for the running release; a case
  that needs what it lacks is not applicable there (`fuzz.paths`).
- JAX internals the oracles hook, detected where they are used, since they
  move between patch releases: ``discharge_state`` takes a jaxpr and its
  consts, a ``ClosedJaxpr`` or a closed ``Jaxpr`` (the abstract path's
  harness, fuzz/paths/abstract.py, renders the running release's call, as a
  reproducer is rendered on the release it runs on); discharge
  rules are ``rule(in_avals, out_avals, *args, **params)`` up to 0.11.1 and
  ``rule(ctx, *args, **params)`` with ``ctx.in_avals`` from 0.11.2.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect

import jax
from jax._src import core as jax_core
from jax._src import dispatch
from jax._src.interpreters import ad, batching
from jax._src.pallas import primitives as pallas_primitives
from jax._src.state import discharge as state_discharge
from jax._src.state import primitives as state_primitives
from jax.experimental.pallas import tpu as pltpu

from fuzz.compat import era_0_6, era_0_7, era_0_9, era_0_11

ERAS = (era_0_6, era_0_7, era_0_9, era_0_11)
FLOOR = era_0_6.FIRST
CEILING = (0, 12)   # the newest minor release known
RULES_TAKE_CTX = hasattr(state_discharge, "DischargeContext")


class UnsupportedJax(RuntimeError):
    pass


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.9.0.1"`` -> ``(0, 9, 0, 1)``; a suffix such as ``.dev`` ends it."""
    parts = []
    for p in text.split("."):
        if not p.isdigit():
            break
        parts.append(int(p))
    return tuple(parts)


def parse_release(text: str) -> tuple[int, ...]:
    """A release number as PyPI and ``seen_on.json`` write it, strictly:
    ``"0.9.0.1"`` -> ``(0, 9, 0, 1)``; ValueError for anything else."""
    parts = text.strip().split(".")
    if len(parts) < 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"{text!r} is not a JAX release number like 0.6.2")
    return tuple(int(p) for p in parts)


def jax_version() -> tuple[int, ...]:
    return parse_version(jax.__version__)


def supported(version: tuple[int, ...]) -> bool:
    return FLOOR <= version and version[:2] <= CEILING


def check_version() -> None:
    """Raise UnsupportedJax for a JAX release the compat layer does not know."""
    if not supported(jax_version()):
        raise UnsupportedJax(
            f"JAX {jax.__version__} is not supported (known: "
            f"{'.'.join(map(str, FLOOR))} to {'.'.join(map(str, CEILING))}.x)")


def era(version: tuple[int, ...] | None = None):
    """The era module of ``version`` (default: the running release)."""
    version = jax_version() if version is None else version
    return [e for e in ERAS if e.FIRST <= version][-1] if version >= FLOOR else era_0_6


def features(version: tuple[int, ...] | None = None) -> dict[str, tuple[int, ...]]:
    """Every feature ``version`` has, with the release it arrived in."""
    version = jax_version() if version is None else version
    found = {}
    for e in ERAS:
        found.update({f: first for f, first in e.ADDED.items() if first <= version})
        for f, gone in e.GONE.items():
            if gone <= version:
                found.pop(f, None)
    return found


KNOWN_FEATURES = frozenset(f for e in ERAS for f in (*e.ADDED, *e.GONE))
FEATURES = features()   # the running release's (asked per case and path: computed once)


def has(feature: str) -> bool:
    if feature not in KNOWN_FEATURES:
        raise KeyError(f"unknown feature {feature!r} (fuzz/compat/era_*.py list them)")
    return feature in FEATURES


def lacking(needed) -> str | None:
    """Why the running release cannot run a program that uses ``needed``
    (feature names), or None: e.g. "JAX 0.6.2 has no jax.new_ref (from 0.7.2)"."""
    for feature in sorted(set(needed)):
        if not has(feature):
            first = next((e.ADDED[feature] for e in ERAS if feature in e.ADDED), None)
            gone = next((e.GONE[feature] for e in ERAS if feature in e.GONE), None)
            when = (f"gone since {'.'.join(map(str, gone))}" if gone and gone <= jax_version()
                    else f"from {'.'.join(map(str, first))}")
            return f"JAX {jax.__version__} has no {feature} ({when})"
    return None


def probe(feature: str) -> bool:
    """Whether the running JAX really has ``feature``: its dotted name
    resolves (``pl.``, ``pltpu.``, ``plgpu.``, ``jax.``), and a call
    ``name(kw=)`` takes keyword ``kw``. For tests against real installs."""
    name, _, keyword = feature.partition("(")
    root, *rest = name.split(".")
    modules = {"pl": "jax.experimental.pallas", "pltpu": "jax.experimental.pallas.tpu",
               "plgpu": "jax.experimental.pallas.triton", "jax": "jax"}
    try:
        obj = importlib.import_module(modules[root])
        for i, part in enumerate(rest):
            if hasattr(obj, part):
                obj = getattr(obj, part)
            else:
                obj = importlib.import_module(".".join([modules[root], *rest[:i + 1]]))
    except ImportError:
        return False
    keyword = keyword.rstrip("=)")
    return not keyword or keyword in inspect.signature(obj).parameters


ENABLE_X64 = era().ENABLE_X64


def enable_x64(flag: bool):
    """The running release's ``enable_x64`` context manager."""
    name = ENABLE_X64.split(".")
    obj = importlib.import_module(".".join(name[:-1]))
    return getattr(obj, name[-1])(flag)


def reset_tpu_interpret() -> None:
    """Reset the TPU interpreter's shared state after a kernel that failed
    (it keeps it, for debugging): pltpu.reset_tpu_interpret_mode_state from
    0.7.0; before, what that does, on the interpreter module's globals."""
    if has("pltpu.reset_tpu_interpret_mode_state"):
        pltpu.reset_tpu_interpret_mode_state()
        return
    interpret = tpu_interpreter()
    with interpret._shared_memory_init_lock:
        interpret._shared_memory = None
        interpret.races = None


def drain_effects() -> None:
    """Wait for the effectful computations in flight and drop their errors.
    Up to 0.11.x a failed one's token stays in JAX's runtime token set (its
    ``block_until_ready`` raises before it clears the set), so every later
    barrier, and the next kernel that calls back, raised that error again."""
    try:
        jax.effects_barrier()
    except Exception:  # noqa: BLE001 - the failed case's, reported with it
        pass
    dispatch.runtime_tokens.clear()


def discharge_rules() -> dict:
    """JAX's registry primitive -> discharge rule (read at call time by JAX)."""
    return state_discharge._discharge_rules


# Primitives an older release names otherwise: jax.jit bound "pjit" up to 0.6.x.
_OLD_NAMES = {"jit": "pjit"}


@functools.cache
def has_discharge_rule(primitive: str) -> bool:
    """Whether this release registers a discharge rule for the primitive
    named ``primitive`` (custom_vmap_call has none up to 0.11.0), full or
    partial (cond, scan, while and run_scoped's are partial before 0.8)."""
    names = {primitive, _OLD_NAMES.get(primitive)}
    rules = [*discharge_rules(), *getattr(state_discharge, "_partial_discharge_rules", {})]
    return any(str(p) in names for p in rules)


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
            if kind == "transpose" and not getattr(jax.config, "jax_vjp3", True):
                # 0.7.2 to 0.8.1 transpose with the fancy table only under
                # jax_vjp3 (off by default up to 0.8.0); else with the other.
                names = names[::-1]
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
    return name in {f.name for f in dataclasses.fields(pltpu.InterpretParams)}


def tpu_races_found() -> bool | None:
    """Whether the TPU interpreter's race detector saw a race in the last
    run with ``detect_races=True`` (None: this release keeps no such record)."""
    races = getattr(tpu_interpreter(), "races", None)
    return None if races is None else bool(races.races_found)


def tpu_interpreter():
    """The TPU interpreter's module (a package from 0.8.0, one module before)."""
    try:
        return importlib.import_module(
            "jax._src.pallas.mosaic.interpret.interpret_pallas_call")
    except ImportError:
        return importlib.import_module("jax._src.pallas.mosaic.interpret")

"""Probes: wrap JAX's discharge machinery for the duration of one case and
record where an invariant breaks, at the point it breaks.

- every call of ``_transform_semaphore`` is checked against the seed invariant,
  exactly as written in JAX: ``value.shape == aval.shape or value.shape == ()``;
- every registered discharge rule is wrapped, and each new ref value it returns
  is checked to keep the input ref's aval (shape and dtype): the strict form;
- and each ref a first-order primitive's rule returns a new value for must be
  one the primitive declares it writes or accumulates into (the effects of its
  abstract evaluation).
- the batching, JVP and transpose rules of get, swap and addupdate are
  wrapped too, only to count their calls (coverage).

Probes record, they never raise into JAX; the oracles turn the records into
failures. Whatever was wrapped is restored on exit, also on error.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

import jax.numpy as jnp

from jax._src.state.types import AccumEffect, WriteEffect

from fuzz import blame, compat


@dataclass(frozen=True)
class Violation:
    invariant: str        # "seed" | "strict" | "effects"
    primitive: str
    message: str
    statement: int | None = None   # the case's statement being discharged


class Probe:
    def __init__(self):
        self.violations: list[Violation] = []
        # calls per rule: discharge rules by primitive, transformation rules
        # as compat.transformation_rules() names them ("get:batch")
        self.rule_calls: dict[str, int] = {}
        self.transform_semaphore_calls = 0
        self.failed_in: str | None = None   # innermost rule an error passed through
        self.failed_at: int | None = None   # ...and the statement it discharged
        self._stack: list[str] = []

    @property
    def primitive(self) -> str:
        return self._stack[-1] if self._stack else "?"

    def count(self, name):
        self.rule_calls[name] = self.rule_calls.get(name, 0) + 1

    def around_rule(self, name, prim=None):
        def around(call, in_avals, values, params):
            self.count(name)
            self._stack.append(name)
            try:
                new_invals, outs = call()
            except Exception:
                if self.failed_in is None:
                    self.failed_in, self.failed_at = name, blame.current()
                raise
            finally:
                self._stack.pop()
            self._check_strict(_describe(name, values, params), name, in_avals, new_invals)
            if prim is not None:
                self._check_effects(name, prim, in_avals, params, new_invals)
            return new_invals, outs
        return around

    def _check_strict(self, call, name, in_avals, new_invals):
        statement = None
        for i, (aval, new) in enumerate(zip(in_avals, new_invals)):
            if new is None or not hasattr(aval, "inner_aval"):
                continue
            want = (tuple(aval.inner_aval.shape), jnp.dtype(aval.inner_aval.dtype))
            # A Python scalar has no aval of its own: it is not the ref's.
            got = ((tuple(new.shape), jnp.dtype(new.dtype)) if hasattr(new, "shape")
                   else ((), f"python {type(new).__name__}"))
            if want != got:
                statement = statement if statement is not None else blame.current()
                self.violations.append(Violation("strict", name, (
                    f"{name}{call} returned a new value "
                    f"{_fmt(*got)} for operand {i}, a ref of {_fmt(*want)}"), statement))

    def _check_effects(self, name, prim, in_avals, params, new_invals):
        updated = [i for i, v in enumerate(new_invals) if v is not None]
        # A higher-order primitive's effects come from its body, and its rule
        # hands back every ref the body may touch, changed or not: only a
        # first-order primitive's effects say exactly what it writes.
        if not updated or any(hasattr(getattr(x, "jaxpr", x), "eqns") for p in params.values()
                              for x in (p if isinstance(p, tuple) else (p,))):
            return
        try:
            _, declared = prim.abstract_eval(*in_avals, **params)
        except Exception:  # noqa: BLE001 - no effects to compare with, not a failure
            return
        # A semaphore primitive declares its updates as one SemaphoreEffect,
        # which names no operand.
        if any(type(e).__name__ == "SemaphoreEffect" for e in declared):
            return
        writes = {compat.effect_input(e) for e in declared
                  if isinstance(e, (WriteEffect, AccumEffect))}
        for i in updated:
            if i not in writes:
                names = sorted(f"{type(e).__name__}({compat.effect_input(e)})" for e in declared)
                self.violations.append(Violation("effects", name, (
                    f"{name} discharge returned a new value for operand {i}, which its "
                    f"effects {{{', '.join(names)}}} do not write"), blame.current()))

    def transform_semaphore(self, original):
        def wrapped(ref_value, transforms, ref_aval):
            self.transform_semaphore_calls += 1
            # The seed invariant, exactly as JAX states it.
            if not (ref_value.shape == ref_aval.shape or ref_value.shape == ()):
                self.violations.append(Violation("seed", self.primitive, (
                    f"{self.primitive}: semaphore value shape {tuple(ref_value.shape)} "
                    f"is neither the aval shape {tuple(ref_aval.shape)} nor ()"),
                    blame.current()))
            return original(ref_value, transforms, ref_aval)
        return wrapped


def counted(rule, count, frame: str | None = None):
    """``rule``, calling ``count()`` first: the same arguments and result, and
    (through ``__wrapped__``) the same signature. ``frame`` names its frame,
    which is all a faulthandler stack of a dead worker shows of it."""
    @functools.wraps(rule)
    def wrapped(*args, **params):
        count()
        return rule(*args, **params)
    if frame is not None:
        wrapped.__code__ = wrapped.__code__.replace(co_name=frame)
    return wrapped


def _fmt(shape, dtype):
    return f"{dtype}[{','.join(map(str, shape))}]"


# Operand names of the semaphore primitives' argument trees, to show the
# static ones (e.g. `decrement`) in messages.
_OPERANDS = {
    "semaphore_signal": ("ref", "transforms", "inc", "device_id", "core_index"),
    "semaphore_wait": ("ref", "transforms", "value", "decrement"),
    "semaphore_read": ("ref", "transforms"),
}


def _describe(name, values, params) -> str:
    """The static operands that tell one call of a primitive from another,
    e.g. ``[decrement=False]`` for a non-decrementing wait."""
    if name not in _OPERANDS or "args_tree" not in params:
        return ""
    unflat = params["args_tree"].unflatten(values)
    static = [f"{k}={v}" for k, v in zip(_OPERANDS[name], unflat)
              if isinstance(v, (bool, int)) and k not in ("ref", "transforms")]
    return f"[{', '.join(static)}]" if static else ""


@contextlib.contextmanager
def probing():
    """Install a fresh Probe on every discharge rule and ``_transform_semaphore``,
    and count the calls of the ref primitives' transformation rules."""
    probe = Probe()
    rules = compat.discharge_rules()
    saved_rules = dict(rules)
    transforms = compat.transformation_rules()
    saved_transforms = {name: table[prim] for name, (table, prim) in transforms.items()}
    module, attr = compat.TRANSFORM_SEMAPHORE
    saved_ts = getattr(module, attr)
    try:
        for prim, rule in saved_rules.items():
            rules[prim] = compat.wrap_rule(rule, probe.around_rule(prim.name, prim))
        for name, (table, prim) in transforms.items():
            table[prim] = counted(saved_transforms[name], functools.partial(probe.count, name))
        setattr(module, attr, probe.transform_semaphore(saved_ts))
        yield probe
    finally:
        rules.clear()
        rules.update(saved_rules)
        # Entry by entry: these tables hold every primitive's rules.
        for name, (table, prim) in transforms.items():
            table[prim] = saved_transforms[name]
        setattr(module, attr, saved_ts)

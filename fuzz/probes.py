"""Probes: wrap JAX's discharge machinery for the duration of one case and
record where an invariant breaks, at the point it breaks.

- every call of ``_transform_semaphore`` is checked against the seed invariant,
  exactly as written in JAX: ``value.shape == aval.shape or value.shape == ()``;
- every registered discharge rule is wrapped, and each new ref value it returns
  is checked to keep the input ref's aval (shape and dtype): the strict form.

Probes record, they never raise into JAX; the oracles turn the records into
failures. Whatever was wrapped is restored on exit, also on error.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import jax.numpy as jnp

from fuzz import blame, compat


@dataclass(frozen=True)
class Violation:
    invariant: str        # "seed" | "strict"
    primitive: str
    message: str
    statement: int | None = None   # the case's statement being discharged


class Probe:
    def __init__(self):
        self.violations: list[Violation] = []
        self.rule_calls: dict[str, int] = {}
        self.transform_semaphore_calls = 0
        self.failed_in: str | None = None   # innermost rule an error passed through
        self.failed_at: int | None = None   # ...and the statement it discharged
        self._stack: list[str] = []

    @property
    def primitive(self) -> str:
        return self._stack[-1] if self._stack else "?"

    def around_rule(self, name):
        def around(call, in_avals, values, params):
            self.rule_calls[name] = self.rule_calls.get(name, 0) + 1
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
            return new_invals, outs
        return around

    def _check_strict(self, call, name, in_avals, new_invals):
        statement = None
        for i, (aval, new) in enumerate(zip(in_avals, new_invals)):
            if new is None or not hasattr(aval, "inner_aval"):
                continue
            want = (tuple(aval.inner_aval.shape), jnp.dtype(aval.inner_aval.dtype))
            got = (tuple(new.shape), jnp.dtype(new.dtype))
            if want != got:
                statement = statement if statement is not None else blame.current()
                self.violations.append(Violation("strict", name, (
                    f"{name}{call} returned a new value "
                    f"{_fmt(*got)} for operand {i}, a ref of {_fmt(*want)}"), statement))

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
    """Install a fresh Probe on every discharge rule and ``_transform_semaphore``."""
    probe = Probe()
    rules = compat.discharge_rules()
    saved_rules = dict(rules)
    module, attr = compat.TRANSFORM_SEMAPHORE
    saved_ts = getattr(module, attr)
    try:
        for prim, rule in saved_rules.items():
            rules[prim] = compat.wrap_rule(rule, probe.around_rule(prim.name))
        setattr(module, attr, probe.transform_semaphore(saved_ts))
        yield probe
    finally:
        rules.clear()
        rules.update(saved_rules)
        setattr(module, attr, saved_ts)

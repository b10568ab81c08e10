"""The discharge invariants, checked where they break (`fuzz.oracles.probes`):
the seed invariant of ``_transform_semaphore``, every rule keeping each
ref's aval, and every first-order rule updating only refs its effects
declare."""
from __future__ import annotations

from fuzz.oracles.base import OracleFailure


class _Invariant(OracleFailure):
    """A probe's violation of ``INVARIANT`` is a failure of the oracle."""
    INVARIANT = ""
    symptom, stage = "invariant violation", "discharge"
    inside_jax = True

    @classmethod
    def judge(cls, report, outcome, probe):
        return [cls.fail(report.case, v.primitive, outcome.path, v.message, statement=v.statement)
                for v in probe.violations if v.invariant == cls.INVARIANT]


class SeedInvariantViolation(_Invariant):
    """``_transform_semaphore`` saw a value whose shape is neither its aval's nor ()."""
    oracle, INVARIANT = "seed-invariant", "seed"
    # First: it is JAX's own assertion, where JAX itself would notice a wrong
    # value; strict violations usually explain it.
    RANK = 1.0
    summary = ("while discharging, `_transform_semaphore` was handed a semaphore value "
               "whose shape is neither the ref's aval shape nor `()` (the assertion in "
               "`jax/_src/pallas/primitives.py`): {message}")


class AvalNotPreserved(_Invariant):
    """A discharge rule returned a new ref value of another shape or dtype."""
    oracle, INVARIANT = "aval-preserved", "strict"
    RANK = 1.1
    summary = ("the discharge rule of `{primitive}` returned a new value for a ref with "
               "another shape or dtype than the ref's own aval; every discharge rule must "
               "keep each ref's aval: {message}")


class EffectsMismatch(_Invariant):
    """A discharge rule updated a ref its primitive does not declare it writes."""
    oracle, INVARIANT = "effects", "effects"
    RANK = 1.2
    summary = ("the discharge rule of `{primitive}` returned a new value for a ref that "
               "the primitive's declared effects do not write or accumulate into; a "
               "primitive's effects must cover every ref its discharge updates: {message}")

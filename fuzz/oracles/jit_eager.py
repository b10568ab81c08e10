"""``jit-eager``: ``pl.run_state`` under ``jax.jit`` (lowered) against the
same call eagerly (discharged and evaluated op by op), on each path that is
not already under ``jax.jit`` (``JIT``; the public ``pallas_call`` is a
``jax.jit``, so eager is jit there)."""
from __future__ import annotations

import contextlib
import re

import jax
from jax._src.pallas import primitives as pallas_primitives
from jax._src.state import discharge as state_discharge

from fuzz import paths
from fuzz.oracles.base import OracleFailure, describe, same, side_by_side

# pl.run_state takes arrays, so its semaphore programs run on the int16
# stand-ins for semaphores: its abstract evaluation lets their
# SemaphoreEffect escape, and jit cannot lower it. Real semaphores exist
# only in kernels, whose own rules take the effect: an artifact of the
# stand-in, not a JAX bug (counted in `CaseReport.artifacts`).
_EFFECT_LEAK = re.compile(r"Cannot lower jaxpr with effects: .*SemaphoreEffect")
EFFECT_ARTIFACT = "run_state of an int16 stand-in semaphore leaks SemaphoreEffect under jax.jit"


@contextlib.contextmanager
def _semaphore_effect_filtered():
    """run_state's abstract evaluation without the SemaphoreEffect, so jit
    lowers and its values can be compared."""
    prim = state_discharge.run_state_p
    real = prim.abstract_eval

    def without_semaphore_effect(*args, **params):
        out, effects = real(*args, **params)
        return out, {e for e in effects
                     if not isinstance(e, pallas_primitives.SemaphoreEffect)}
    prim.abstract_eval = without_semaphore_effect
    try:
        yield
    finally:
        prim.abstract_eval = real


class JitMismatch(OracleFailure):
    """A path under jax.jit differs from the same path run eagerly."""
    oracle = "jit-eager"
    summary = "`jax.jit` of the program gives another result than running it eagerly: {message}"
    wrong_value = under_jit = True
    RANK, COST = 3.0, 1
    RULES = "jit"

    @classmethod
    def compare(cls, report):
        found = []
        for o in (o for o in report.fine if paths.fact(o.path, "RERUN") and paths.fact(o.path, "JIT")):
            mismatches, compared = cls.jit_vs_eager(report, o)
            found += mismatches
            report.count(cls.oracle, compared)
        return found

    @classmethod
    def jit_vs_eager(cls, report, eager: paths.Outcome) -> tuple[list[OracleFailure], bool]:
        """The failures, and whether values were compared. Where the
        stand-in's effect stops jit from lowering, that is counted as an
        artifact, and the values are compared with the effect filtered out."""
        found, case = [], report.case
        jitted = paths.run(case, eager.path, wrap=jax.jit)
        if jitted.error is not None and _EFFECT_LEAK.search(str(jitted.error)):
            report.artifacts[EFFECT_ARTIFACT] = report.artifacts.get(EFFECT_ARTIFACT, 0) + 1
            with _semaphore_effect_filtered():
                jitted = paths.run(case, eager.path, wrap=jax.jit)
            note = " (SemaphoreEffect filtered)"
        else:
            note = ""
        if jitted.error is not None or not same(jitted.values, eager.values):
            found.append(cls._mismatch(case, eager, jitted, note))
        return found, jitted.error is None

    @classmethod
    def _mismatch(cls, case, eager, jitted, note="") -> OracleFailure:
        what = ("raised " + paths.first_line(jitted.error) if jitted.error is not None
                else "results differ")
        return cls.fail(case, "?", eager.path, f"under jax.jit{note} {what}",
                        side_by_side(case, [("results", describe(eager), describe(jitted))],
                                     "eager", "jax.jit"),
                        shape=(f"raised {type(jitted.error).__name__}" if jitted.error is not None
                               else "results differ") + note,
                        raised=jitted.error)

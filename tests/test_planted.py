"""Planted bugs: each oracle must catch a deliberately wrong JAX discharge
rule (or helper), with its own exception, and shrink it to a small case; the
same case must behave as real JAX does once the patch is gone."""
import jax
import jax.numpy as jnp
import pytest

from fuzz import compat, oracles
from fuzz.suppressions import known_findings
from fuzz.campaign.property import run_campaign
from fuzz.ops.semaphore import Wait
from fuzz.oracles import abstract_concrete, errors, invariants, probes
from fuzz.triage import findings, minimize
from jax._src.pallas import primitives as pallas_primitives
from jax._src.state import discharge as state_discharge
from hunting import rule_returning
from strategies.programs import invalid_programs, programs

signal_p, wait_p, read_p = compat.SEMAPHORE_PRIMITIVES


def _caught(strategy, cls, primitive=None, max_examples=150):
    """The failure a campaign finds, shrunk by Hypothesis and then reduced
    on the IR as a finding is before it is filed. Only ``cls``'s oracle
    counts: the others' failures of the same plant would be shrunk too."""
    stats = run_campaign(strategy, max_examples=max_examples, seed=0, only_oracles=(cls.oracle,))
    assert not stats.errors, stats.errors
    caught = [f for f in stats.failures if isinstance(f, cls)
              and primitive in (None, f.primitive)]
    assert caught, f"{cls.__name__} not raised; got {stats.failures}"
    f = caught[0]
    f.case = minimize.minimize(f.case, findings.same_failure(findings.signature(f))).case
    return f


def _small(case, statements=2, chain=2):
    assert len(case.body) <= statements, case
    assert all(len(s.view.transforms) <= chain for s in case.body), case
    assert all(len(s.shape) <= 2 for s in case.refs), case


def _behaves_like_real_jax(case):
    report = oracles.check(case)
    assert all(known_findings.match(f, report.failures) for f in report.failures), \
        report.failures


def test_seed_oracle_catches_a_rule_storing_a_wrongly_shaped_semaphore(plant):
    # signal stores its new value with an extra leading axis: the next use of
    # the semaphore sees a shape that is neither the aval's nor ().
    plant(compat.discharge_rules(), signal_p, rule_returning(signal_p, lambda v: v[None]))
    f = _caught(programs(kinds=("int16",), data_dtypes=()), invariants.SeedInvariantViolation)
    assert f.primitive in ("semaphore_signal", "semaphore_wait", "semaphore_read")
    assert "is neither the aval shape" in str(f)
    _small(f.case)
    plant(compat.discharge_rules(), signal_p, compat.discharge_rules()[signal_p].__wrapped__)
    _behaves_like_real_jax(f.case)


def test_strict_oracle_catches_a_rule_returning_the_wrong_dtype(plant):
    plant(compat.discharge_rules(), wait_p,
          rule_returning(wait_p, lambda v: v.astype(jnp.int32)))
    f = _caught(programs(kinds=("int16",), data_dtypes=()), invariants.AvalNotPreserved, "semaphore_wait")
    assert "int32[" in str(f) and "int16[" in str(f)
    _small(f.case, statements=1, chain=1)
    assert isinstance(f.case.body[0], Wait)


def test_strict_oracle_catches_a_rule_returning_the_wrong_shape(plant):
    # Shape () passes the seed invariant (JAX tolerates scalars): only the
    # strict invariant sees the whole ref replaced by one element.
    plant(compat.discharge_rules(), signal_p,
          rule_returning(signal_p, lambda v: v.reshape(-1)[0] if v.size else v))
    f = _caught(programs(kinds=("int16",), data_dtypes=()), invariants.AvalNotPreserved, "semaphore_signal")
    assert "returned a new value int16[]" in str(f)
    _small(f.case, statements=1)
    assert f.case.refs[f.case.body[0].view.ref].shape != ()


def test_valid_runs_oracle_catches_transform_semaphore_ignoring_transforms(plant):
    real = pallas_primitives._transform_semaphore
    plant(pallas_primitives, "_transform_semaphore", lambda value, transforms, aval: value)
    f = _caught(programs(kinds=("int16",), data_dtypes=()), errors.UnexpectedError)
    assert f.primitive.startswith("semaphore_")
    _small(f.case, statements=1, chain=1)
    # The error is the plant's: real JAX runs the same case without it.
    plant(pallas_primitives, "_transform_semaphore", real)
    _behaves_like_real_jax(f.case)


def test_abstract_concrete_oracle_catches_a_discharge_driver_dropping_state(plant):
    real = state_discharge._eval_jaxpr_discharge_state

    def flattening(*args, **kwargs):  # returns every final ref value flattened
        return [v.reshape(-1) for v in real(*args, **kwargs)]
    plant(state_discharge, "_eval_jaxpr_discharge_state", flattening)
    f = _caught(programs(kinds=("int16",), data_dtypes=()), abstract_concrete.AbstractConcreteMismatch)
    assert "abstract evaluation promised" in str(f)
    _small(f.case, statements=1, chain=1)


def test_invalid_oracle_catches_missing_semaphore_type_check(plant):
    def no_check(sem_aval, sem_transforms_avals, name, allowed_semaphore_types=None):
        return None
    plant(pallas_primitives, "check_sem_avals", no_check)
    f = _caught(invalid_programs(mistakes=("wrong_dtype",)), errors.SilentAcceptance)
    assert f.primitive in ("semaphore_signal", "semaphore_wait")
    _small(f.case, statements=2)
    jax.clear_caches()


def test_probes_restore_everything_also_on_error():
    rules_before = dict(compat.discharge_rules())
    ts_before = pallas_primitives._transform_semaphore
    with pytest.raises(RuntimeError):
        with probes.probing():
            assert compat.discharge_rules()[signal_p] is not rules_before[signal_p]
            raise RuntimeError("boom")
    assert compat.discharge_rules() == rules_before
    assert pallas_primitives._transform_semaphore is ts_before

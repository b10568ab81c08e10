"""The partial-discharge oracle: what its comparison shows a reproducer, and
the public faces of the known findings only it had seen."""
import dataclasses

import jax
import pytest

from fuzz import ir, oracles
from fuzz.ops.control import Wrap
from fuzz.ops.control.loop import Loop
from fuzz.ops.ref.inspect import Inspect
from fuzz.ops.ref import Get, Swap
from fuzz.ops.ref.common import Iota
from fuzz.oracles.partial_discharge import PartialDischargeMismatch
from fuzz.suppressions import known_findings
from fuzz.triage import reproducer
from hunting import needs

CLEAN = ir.Case((ir.Ref("int32", (3,)), ir.Ref("int32", (2,))), (
    Get(ir.View(1, (ir.At((ir.Int(1),)),))), Swap(ir.View(0, (ir.At((ir.Int(2, True),)),)),
                                                  Iota("int32", (), 5))), ("abstract",))


def _live(entry_id):
    k = known_findings.BY_ID[entry_id]
    if k not in known_findings.KNOWN:
        pytest.skip(f"{entry_id} is not live on this JAX")
    return k


@needs("jax.new_ref")
def test_a_clean_kernel_discharged_in_part_agrees_and_its_comparison_is_the_abstract_paths():
    report = oracles.check(CLEAN)
    assert report.compared.get("partial-discharge") and not report.failures, report.failures
    how = PartialDischargeMismatch.comparison(CLEAN, "abstract")
    assert "should_discharge=mask" in how.source and "MASK = [True, True, False, True]" in how.source
    # (traced over jax.new_ref values, public API, where the path's AbstractRefs
    # are plain ones; over the path's own avals where a semaphore is physicalized)
    assert "jax.make_jaxpr(kernel)(*map(jax.new_ref, INITS))" in how.source
    semaphore = dataclasses.replace(CLEAN, refs=(*CLEAN.refs, ir.Ref("regular", ())))
    assert "return trace()" in PartialDischargeMismatch.comparison(semaphore, "abstract").source
    # (paths whose program neither traces nor discharges the kernel alone)
    assert PartialDischargeMismatch.comparison(CLEAN, "run_state") is None
    assert PartialDischargeMismatch.comparison(CLEAN, "pallas_call") is None


@needs("jax.new_ref")
def test_a_planted_wrong_value_of_the_kept_ref_is_reported(plant):
    """The kept ref is run as a jax.new_ref; one made one too high ends
    wrong, which the comparison's own source reports."""
    real = jax.new_ref
    plant(jax, "new_ref", lambda x, *a, **k: real(x + 1, *a, **k))
    (failure,) = [f for f in oracles.check(CLEAN).failures if f.oracle == "partial-discharge"]
    assert failure.message == "final r0 differs between full and partial discharge (r0 kept)"
    assert failure.known is None


@needs("jax.new_ref")
def test_an_internal_partial_discharge_failure_has_a_reproducer_that_reproduces():
    """Before the comparison its reproducer discharged fully, which runs, so
    the finding was reported flaky."""
    k = _live("shard-map-partial-discharge-discharges-kept-ref")
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    found = reproducer.best(k.example, [failure.path], failure)
    assert (found["path"], found["status"]) == ("abstract", "reproduces"), found
    assert "should_discharge=mask" in found["script"] and k.caveat == "internal API"


@pytest.mark.parametrize("entry_id, path", [
    ("wrapped-bool-addupdate-partial-discharge", "pallas_call"),
    ("partial-discharge-switch-debug-callback-sharding", "eager")])
def test_a_public_face_reproduces_on_its_public_path(entry_id, path):
    k = _live(entry_id)
    assert k.example.paths == (path,) and not k.caveat
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    assert failure.oracle == "valid-runs"
    found = reproducer.best(k.example, [failure.path], failure)
    assert (found["path"], found["status"]) == (path, "reproduces"), found


def test_the_bool_addupdate_face_is_the_jit_rules_and_needs_both_kinds_of_ref():
    """Same root as wrapper-in-run-scoped-mixing-scoped-and-outer-refs: the
    jit rule discharges the scoped ref run_scoped keeps. As an operand ref
    (discharged with the rest) it runs."""
    k = _live("wrapped-bool-addupdate-partial-discharge")
    assert k.same_as == "wrapper-in-run-scoped-mixing-scoped-and-outer-refs"
    assert isinstance(k.example.statements[0], Wrap)
    operand = dataclasses.replace(k.example, refs=(dataclasses.replace(k.example.refs[0],
                                                                       scoped=False),))
    assert not [f for f in oracles.check(operand).failures if f.oracle == "valid-runs"]


def test_an_empty_ref_keeps_its_shape_in_the_comparison():
    """A (0, 0) ref's initial contents are written with their shape (its
    tolist() is [], a (0,) array): a loop's debug callback of one, kept a
    ref, once gave the oracle's own verifier error."""
    import jax.numpy as jnp
    import numpy as np
    from fuzz.oracles.base import literal
    assert eval(literal(np.zeros((0, 0), bool)), {"np": np, "jnp": jnp}).shape == (0, 0)
    case = ir.Case((ir.Ref("dma", ()), ir.Ref("bool", (0, 0))),
                   (Loop(ir.Int(0), (Inspect(ir.View(1)),), "fori_loop"),))
    assert not [f for f in oracles.check(case).failures if f.oracle == "partial-discharge"]


def test_a_program_whose_full_discharge_fails_to_run_is_not_this_oracles_finding():
    """Where the fully discharged program itself fails (here a shard_map
    leaves dyn sharded: shard-map-dynamic-update-sharding, valid-runs'
    finding on the paths that run it) there is nothing to compare the
    partial discharge with: no partial-discharge failure."""
    from fuzz.ops.semaphore import Read
    case = ir.Case((ir.Ref("regular", ()), ir.Ref("int16", ())), (
        Wrap("shard_map", ()), Inspect(ir.View(1)),
        Read(ir.View(0, (ir.Reshape((1, 1)), ir.At((ir.Int(0), ir.Int(0, True))))))), ("abstract",))
    report = oracles.check(case)
    assert "partial-discharge" not in report.not_applied
    assert not [f for f in report.failures if f.oracle == "partial-discharge"]

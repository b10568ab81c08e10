"""Planted bugs the shape oracles cannot see: each keeps every shape right and
computes the wrong counts. The model (or another path) must catch each,
shrink it, and show expected against actual."""
import dataclasses
import types

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

from fuzz import compat, ir, oracles
from fuzz.suppressions import unsupported
from fuzz.ops.ref import Swap
from fuzz.ops.ref.common import Fill
from fuzz.ops.semaphore import Read, Signal
from fuzz.oracles import jit_eager, model_vs_path, path_vs_path, rewrites, vmap_stack
from fuzz.triage import findings
from jax._src.interpreters import mlir
from jax._src.pallas import hlo_interpreter
from jax._src.state import discharge as state_discharge
from strategies.programs import programs
from hunting import batching_rule, hunt, premise

signal_p, wait_p, _ = compat.SEMAPHORE_PRIMITIVES


def _int16(*paths):
    """Programs aimed at where the planted bugs live: index chains only
    (reshape and transpose views mostly hit known JAX bugs and unsupported
    features first, which would leave few cases to evaluate), run only on
    ``paths``, those whose runs show the bug; the others would only cost time."""
    return programs(kinds=("int16",), data_dtypes=(), transforms=("at",), max_semaphores=2, max_statements=4,
                    paths=paths, max_depth=0)


# run_state shows every read and every final count: enough for the model.
RUN_STATE = _int16("run_state")


def _changing_update(prim, change):
    """The real rule of ``prim``, with its new semaphore value replaced by
    ``change(old, new)`` (same shape and dtype)."""
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        new = new_invals[0]
        return [None if new is None else change(values[0], new), *new_invals[1:]], outs
    return compat.wrap_rule(compat.discharge_rules()[prim], around)


def _signal_adding_twice_in(fn):
    """``fn``, discharging with a signal rule that adds twice while it runs
    (and only then): a bug planted in one caller of the rules."""
    wrong = _changing_update(signal_p, lambda old, new: old + 2 * (new - old))

    def planted(*args, **kwargs):
        rules = compat.discharge_rules()
        real, rules[signal_p] = rules[signal_p], wrong
        try:
            return fn(*args, **kwargs)
        finally:
            rules[signal_p] = real
    return planted


def _to_the_next_element(old, new):
    delta = (new - old).reshape(-1)
    return old + jnp.roll(delta, 1).reshape(old.shape)


def _hunt(cls, names, strategy=RUN_STATE, max_examples=100, match=None):
    return hunt(cls, names, strategy, max_examples=max_examples, match=match)


def _caught(cls, max_examples=100):
    f = _hunt(cls, ("model-vs-path",), max_examples=max_examples)
    assert "expected (model)" in str(f) and "actual (" in str(f), str(f)
    return f


def test_model_catches_a_signal_landing_on_the_wrong_element(plant):
    plant(compat.discharge_rules(), signal_p, _changing_update(signal_p, _to_the_next_element))
    # (it needs a signal on an element of a semaphore of two or more: the
    # 125th draw of seed 0 is the first)
    f = _caught(model_vs_path.ModelMismatch, max_examples=200)
    assert f.primitive == "semaphore_signal"
    assert any(len(s.shape) >= 1 for s in f.case.refs)
    assert findings.root_cause(f).startswith("rule:discharge:semaphore_signal:")


def test_model_catches_a_signal_rule_dropping_every_second_update(plant):
    # The 2nd, 4th, ... signal of each discharged kernel keeps the old value.
    # (The count restarts with each discharge, so a program always fails the
    # same way, as Hypothesis needs.)
    signals = [0]

    def around(call, in_avals, values, params):
        new_invals, outs = call()
        signals[0] += 1
        return ([values[0], *new_invals[1:]] if signals[0] % 2 == 0 else new_invals), outs

    def discharge_state(*args, **kwargs):
        signals[0] = 0
        return real_discharge_state(*args, **kwargs)
    real_discharge_state = state_discharge.discharge_state
    plant(compat.discharge_rules(), signal_p,
          compat.wrap_rule(compat.discharge_rules()[signal_p], around))
    plant(state_discharge, "discharge_state", discharge_state)
    f = _caught(model_vs_path.ModelMismatch)
    assert f.primitive == "semaphore_signal"
    assert sum(type(s).__name__ == "Signal" for s in f.case.body) >= 2


def test_model_catches_a_wait_that_skips_the_decrement(plant):
    def no_decrement(old, new):
        return old
    plant(compat.discharge_rules(), wait_p, _changing_update(wait_p, no_decrement))
    f = _caught(model_vs_path.ModelMismatch)
    assert f.primitive == "semaphore_wait"
    assert any(type(s).__name__ == "Wait" and s.decrement for s in f.case.body)


def test_path_vs_path_catches_one_interpreter_going_wrong(plant):
    # Only pallas_call's HLO interpreter discharges with a signal rule that
    # adds twice; run_state keeps the real one. No model is consulted.
    discharge_state = _signal_adding_twice_in(state_discharge.discharge_state)
    plant(hlo_interpreter, "state_discharge",
          types.SimpleNamespace(**{**vars(state_discharge), "discharge_state": discharge_state}))
    f = _hunt(path_vs_path.PathMismatch, ("path-vs-path",), _int16("run_state", "pallas_call"))
    assert "run_state/pallas_call" in str(f)


@pytest.mark.parametrize("entry", unsupported.CURRENT, ids=lambda e: e.id)
def test_each_unsupported_entry_is_still_unsupported(entry):
    """A JAX release that adds support fails here: drop the entry."""
    report = oracles.check(entry.example)
    assert not report.failures, report.failures
    assert [u[1] for u in report.unsupported if u[0] == entry.path] == [entry]


# --- metamorphic oracles: each with a bug only its own comparison can see ----

def test_chain_equivalence_catches_an_update_lost_through_a_longer_chain(plant):
    # Views built from two or more transforms lose their signal; one index
    # works. The re-indexed program (one static index) exposes it.
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        _, transforms, *_ = params["args_tree"].unflatten(values)
        if len(transforms) >= 2:
            new_invals = [values[0], *new_invals[1:]]
        return new_invals, outs
    plant(compat.discharge_rules(), signal_p,
          compat.wrap_rule(compat.discharge_rules()[signal_p], around))
    f = _hunt(rewrites.ChainMismatch, ("chain-equivalence",))
    assert "re-indexed" in str(f)
    assert any(len(s.view.transforms) >= 2 for s in f.case.body)


def test_vmap_stack_catches_a_batching_rule_that_mixes_up_batch_elements(plant):
    from jax._src.pallas.pallas_call import pallas_call_p
    table, real = batching_rule(pallas_call_p)

    def reversed_batch(*args, **kwargs):
        outs, dims = real(*args, **kwargs)
        return [jnp.flip(o, axis=d) if d is not None else o for o, d in zip(outs, dims)], dims
    plant(table, pallas_call_p, reversed_batch)
    # vmap-stack applies to kernels that end with every count at 0; batch
    # elements differ only where a read comes after a dynamic amount.
    def read_after_dynamic_signal(case):
        firsts = [n for n, s in enumerate(case.body)
                  if isinstance(s, Signal) and isinstance(s.inc, ir.Int) and s.inc.dynamic]
        return bool(firsts) and any(isinstance(s, Read) for s in case.body[firsts[0]:])
    balanced = programs(kinds=("int16",), data_dtypes=(), shapes=st.just(()), max_semaphores=1, max_statements=4,
                        paths=("pallas_call",), endings=("balanced",))
    f = _hunt(vmap_stack.VmapMismatch, ("vmap-stack",),
              strategy=balanced.filter(read_after_dynamic_signal))
    assert "one by one" in str(f)
    # vmap batches the kernel as a whole, by pallas_call's batching rule.
    assert findings.root_cause(f).startswith("rule:batching:pallas_call:"), findings.root_cause(f)


@premise(dataclasses.is_dataclass(mlir._lowerings[state_discharge.run_state_p]),
         "a lowering is a bare rule, not the record this plant replaces the rule of")
def test_jit_eager_catches_a_lowering_that_discharges_differently(plant):
    # Under jit, run_state is lowered; eagerly it is discharged and evaluated.
    # Plant a lowering whose signal rule adds twice; eager keeps the real one.
    # The oracle itself filters the SemaphoreEffect that stops every
    # stand-in semaphore program from lowering (an artifact, not a bug).
    run_state_p = state_discharge.run_state_p
    impl = _signal_adding_twice_in(state_discharge._run_state_impl)
    plant(mlir._lowerings, run_state_p, dataclasses.replace(
        mlir._lowerings[run_state_p], rule=mlir.lower_fun(impl, multiple_results=True)))
    f = _hunt(jit_eager.JitMismatch, ("jit-eager",), match="results differ")
    # (releases up to 0.8.x lower it without filtering the stand-in's effect)
    messages = {"under jax.jit (SemaphoreEffect filtered) results differ",
                "under jax.jit results differ"}
    assert f.path == "run_state" and f.message in messages, f.message


def test_a_nan_is_the_same_value_as_any_other_nan():
    """A bitcast view may store a NaN (int32 -1 as float32), and which NaN
    bits XLA keeps, JAX does not say: every comparison (the model's, path
    against path, jit, vmap, partial discharge) takes two NaNs as one value,
    and still tells a NaN from a number."""
    from fuzz.oracles.base import nan_same, same
    assert nan_same(np.array([np.nan, 1.0])) == nan_same([float("nan"), 1.0])
    assert not same([np.array([np.nan])], [np.array([1.0])])
    assert same([np.array([np.nan, 2.0], np.float32)], [np.array([np.nan, 2.0], np.float32)])
    case = ir.Case((ir.Ref("float32", (1, 1)),), (Swap(ir.View(0, (ir.Bitcast("int32"),)), Fill(
        ir.Int(-1), (1, 1))),), paths=("run_state", "jax_refs", "pallas_call"))
    report = oracles.check(case)
    assert report.compared["model-vs-path"] and report.compared["path-vs-path"], report.compared
    assert not [f for f in report.failures if f.known is None], report.failures

"""The data-ref family (get, swap, addupdate, masked loads and stores): the model against NumPy, and planted
bugs in JAX's rules for it, each caught by its oracle and shrunk."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fuzz import compat, ir, model, oracles
from fuzz.suppressions import seen_on
from fuzz.ops.ref import AddUpdate, Get, MaskedLoad, MaskedStore, Swap
from fuzz.ops.ref.common import Iota, Mask, Scalar
from fuzz import emit, paths
from fuzz.oracles import abstract_concrete, errors, invariants, model_vs_path, partial_discharge, path_vs_path
from jax._src.pallas import primitives as pallas_primitives
from jax._src.state import primitives as state_primitives
from strategies.programs import data_refs, invalid_programs, programs, statements
from hunting import (as_on_newest, hunt, lacked_here, needs, needs_eager_at,
                     plant_addupdate_twice_while_a_ref_is_kept, plants_rule, premise,
                     rule_returning)


# A scoped data ref: which paths can run one, the path modules say.
_SCOPED = ir.Case((ir.Ref("int32", (1,), scoped=True),), (Get(ir.View(0)),))


# The ops whose rules these tests plant wrong (not the debug callbacks).
_STORES_AND_LOADS = (Get, Swap, AddUpdate, MaskedLoad, MaskedStore)


def _data(*on, dtypes=("int8", "int32", "float32", "bool"), ops=_STORES_AND_LOADS, **options):
    """Data-ref programs only (no semaphores), run only on the paths ``on``
    (scoped refs only where one of them can run them)."""
    options.setdefault("scoped", any(paths.not_applicable(_SCOPED, p) is None for p in on))
    # Flat programs: the planted rules are the data-ref ops' (control flow
    # is tests/test_control_family.py's).
    options.setdefault("max_depth", 0)
    return programs(max_semaphores=0, data_dtypes=dtypes, max_statements=4, paths=on,
                    ops=ops, x64=False, **options)


def _hunt(cls, names, strategy, primitive=None):
    return hunt(cls, names, strategy, primitive=primitive, statements=2)


def _rolled(v):
    return jnp.roll(v.reshape(-1), 1).reshape(v.shape)


def test_model_follows_numpy_for_get_and_swap():
    ref = ir.Ref("int8", (2, 3))
    at = ir.View(0, (ir.At((ir.Slice(None, None, -1 + 2), ir.IntArray((2, 0), True))),))
    case = ir.Case((ref,), (Get(at), Swap(at, Iota("int8", (2, 2), 10)),
                            Swap(ir.View(0, (ir.At((ir.Int(1), ir.Int(1))),)), Scalar(-1))))
    meaning = model.evaluate(case)
    expected = np.arange(6).reshape(2, 3) % 7 + 1
    got = expected[:, [2, 0]]
    expected[:, [2, 0]] = np.arange(4).reshape(2, 2) + 10
    expected[1, 1] = -1
    assert meaning.state == (expected.tolist(),)
    memory = model.Memory(case)
    Get(at).run(memory, 0)
    np.testing.assert_array_equal(memory.values[0], got)


def test_a_swap_storing_one_element_twice_has_no_meaning():
    twice = ir.View(0, (ir.At((ir.IntArray((1, 1), True),)),))
    case = ir.Case((ir.Ref("int32", (2,)),), (Swap(twice, Iota("int32", (2,))),))
    assert "stores twice" in model.evaluate(case).undefined


def test_strict_oracle_catches_a_swap_rule_changing_the_dtype(plant):
    swap_p = state_primitives.swap_p
    plant(compat.discharge_rules(), swap_p, rule_returning(
        swap_p, lambda v: v.astype(jnp.float32 if v.dtype != jnp.float32 else jnp.int32)))
    # (no scoped refs: run_scoped's harness stores a scoped ref's initial
    # contents with a swap of its own, no statement's, which the hunt may
    # shrink to)
    f = _hunt(invariants.AvalNotPreserved, ("aval-preserved",), _data("abstract", scoped=False),
              "swap")
    assert "returned a new value" in f.message
    assert any(isinstance(s, Swap) for s in f.case.body)


def test_model_catches_a_swap_landing_on_the_next_element(plant):
    swap_p = state_primitives.swap_p
    plant(compat.discharge_rules(), swap_p, rule_returning(swap_p, _rolled))
    f = _hunt(model_vs_path.ModelMismatch, ("model-vs-path",),
              _data("run_state", ops=(Get, Swap), transforms=("at",)), "swap")
    assert "expected (model)" in str(f)
    assert any(len(r.shape) >= 1 and np.prod(r.shape) >= 2 for r in f.case.refs)


def test_paths_disagree_when_only_discharge_goes_wrong(plant):
    # The TPU interpreter runs no discharge rule: a wrong get rule shows as
    # the two interpreters disagreeing, with no model consulted.
    get_p = state_primitives.get_p
    real = compat.discharge_rules()[get_p]

    def around(call, in_avals, values, params):
        new_invals, out = call()
        return new_invals, out + jnp.ones_like(out) if out.dtype != jnp.bool_ else ~out
    plant(compat.discharge_rules(), get_p, compat.wrap_rule(real, around))
    f = _hunt(path_vs_path.PathMismatch, ("path-vs-path",),
              _data("pallas_call", "tpu_interpret", dtypes=("int32",), ops=(Get, Swap)))
    assert "pallas_call/tpu_interpret" in str(f)


@plants_rule("remat2")
@needs_eager_at
def test_eager_refs_disagree_with_jit_when_the_remat_rule_goes_wrong(plant):
    # Eagerly, each ref primitive is discharged alone; the jit and remat2
    # rules, which discharge the kernel under jax_refs, never run. A wrong
    # remat2 rule shows as the two disagreeing.
    from jax._src.ad_checkpoint import remat_p
    plant(compat.discharge_rules(), remat_p, rule_returning(remat_p, _rolled))
    f = _hunt(path_vs_path.PathMismatch, ("path-vs-path",),
              _data("jax_refs", "eager", dtypes=("int32",), ops=(Get, Swap), transforms=("at",)))
    assert "jax_refs/eager" in str(f)


def test_abstract_oracle_catches_a_get_with_the_wrong_shape(plant):
    # get's abstract evaluation drops the value's last axis: NumPy's
    # arr[idx].shape says otherwise.
    get_p = state_primitives.get_p
    real = get_p.abstract_eval

    def dropping(*args, **params):
        out, effects = real(*args, **params)
        return (out.update(shape=out.shape[:-1]) if out.shape else out), effects
    plant(get_p, "abstract_eval", dropping)
    f = _hunt(abstract_concrete.AbstractConcreteMismatch, ("abstract-concrete",), _data("abstract"), "get")
    assert "NumPy's arr[idx]" in f.message


def test_invalid_rejected_catches_a_swap_without_its_dtype_check(plant):
    # swap's abstract evaluation stops checking the value's dtype: a float
    # stored into an int8 ref is no longer refused.
    swap_p = state_primitives.swap_p
    real = swap_p.abstract_eval

    def unchecked(ref_aval, val_aval, *idx, **params):
        val_aval = val_aval.update(dtype=ref_aval.inner_aval.dtype)
        return real(ref_aval, val_aval, *idx, **params)
    plant(swap_p, "abstract_eval", unchecked)
    f = _hunt((errors.SilentAcceptance, errors.WrongError), ("invalid-rejected",),
              invalid_programs(mistakes=("value_dtype",), paths=("abstract",)))
    assert f.primitive == "swap"


def test_model_accumulates_addupdate_like_numpy_add_at():
    twice = ir.View(0, (ir.At((ir.IntArray((1, 1, 0), True),)),))
    case = ir.Case((ir.Ref("int8", (3,)),), (AddUpdate(twice, Iota("int8", (3,), 126)),))
    expected = np.array([1, 2, 3], np.int8)
    np.add.at(expected, [1, 1, 0], np.array([126, 127, 128]).astype(np.int8))
    assert model.evaluate(case).state == (expected.tolist(),)


def test_model_catches_an_addupdate_rule_that_subtracts(plant):
    addupdate_p = state_primitives.addupdate_p
    real = compat.discharge_rules()[addupdate_p]

    def around(call, in_avals, values, params):
        new_invals, outs = call()
        old = values[0]
        return [2 * old - new_invals[0], *new_invals[1:]], outs
    plant(compat.discharge_rules(), addupdate_p, compat.wrap_rule(real, around))
    f = _hunt(model_vs_path.ModelMismatch, ("model-vs-path",),
              _data("run_state", dtypes=("int32",), ops=(Get, AddUpdate)), "addupdate")
    assert any(isinstance(s, AddUpdate) for s in f.case.body)


def test_effects_oracle_catches_a_swap_declaring_only_a_read(plant):
    # swap's abstract evaluation declares it reads its ref, not that it
    # writes it; its discharge rule still writes it.
    from jax._src.state.types import ReadEffect, WriteEffect
    swap_p = state_primitives.swap_p
    real = swap_p.abstract_eval

    def read_only(*args, **params):
        out, effects = real(*args, **params)
        return out, {ReadEffect(compat.effect_input(e)) if isinstance(e, WriteEffect) else e
                     for e in effects}
    plant(swap_p, "abstract_eval", read_only)
    # (no scoped refs: the harness's own swap of one is no statement to blame)
    f = _hunt(invariants.EffectsMismatch, ("effects",), _data("abstract", scoped=False), "swap")
    assert "do not write" in f.message and f.statement is not None
    assert isinstance(f.case.body[f.statement], Swap)


# The plant is in addupdate's rule (0.6.2 draws none); the oracle runs
# jax.new_ref programs (from 0.7.2).
@needs("jax.ref.addupdate", "jax.new_ref")
def test_partial_discharge_catches_a_rule_that_goes_wrong_when_a_ref_is_kept(plant):
    # Full and partial discharge then disagree.
    plant_addupdate_twice_while_a_ref_is_kept(plant)
    # Without masked stores, whose real discharge breaks partial discharge
    # (known: masked-swap-returns-transformed-ref) before the planted rule does;
    # in the default memory space, as the plant's arithmetic takes no other;
    # no scoped refs, which partial discharge cannot keep; two data refs in
    # use, since it keeps the first and discharges the others.
    f = _hunt(partial_discharge.PartialDischargeMismatch, ("partial-discharge",),
              _data("abstract", dtypes=("int32",), ops=(Get, Swap, AddUpdate),
                    memory_spaces=(None,), transforms=("at",), scoped=False).filter(
                  lambda c: len(model.data_refs(c)) >= 2))
    assert "differs between full and partial discharge" in f.message
    assert any(isinstance(s, AddUpdate) for s in f.case.body)


@needs("jax.new_ref")
def test_partial_discharge_keeps_only_a_ref_in_the_default_memory_space():
    """A VMEM ref kept cannot run outside a kernel as the jaxpr types it
    (``Ref<vmem>``): passed in plain, a value read from it and carried by a
    loop had two types (``bool<vmem>[]``, ``bool[]``), a mismatch of the
    oracle's making that the default run filed as a finding. In the default
    memory space the same program is checked, and agrees."""
    from fuzz.ops.control import Loop
    body = (Get(ir.View(0)), Loop(ir.Int(-1), (Loop(ir.Int(1), (
        Swap(ir.View(0), ir.Result(0)),)),), "while_loop"))
    for space, checked in (("vmem", False), (None, True)):
        case = ir.Case((ir.Ref("bool", (), memory_space=space),), body, ("abstract",))
        report = oracles.check(case, oracles=("partial-discharge",))
        assert not report.failures, [f.message for f in report.failures]
        assert bool(report.compared.get("partial-discharge")) == checked, report.not_applied


def test_model_masks_loads_and_stores_like_numpy_where():
    ref = ir.Ref("int32", (2, 3))
    row = ir.View(0, (ir.At((ir.Int(1, True), ir.Slice())),))
    on = Mask((3,), 2)               # lanes 0 and 2
    case = ir.Case((ref,), (MaskedLoad(row, on, Scalar(9)),
                            MaskedStore(ir.View(0, (ir.At((ir.Int(0, True), ir.Slice())),)),
                                        ir.Result(0), Mask((3,), 2, 0, True))))
    x = np.arange(6).reshape(2, 3) % 7 + 1
    loaded = np.where([True, False, True], x[1], 9)
    x[0] = np.where([False, True, False], loaded, x[0])
    assert model.evaluate(case).state == (x.tolist(),)


def test_a_masked_load_without_other_gives_no_value_to_use():
    # Its masked-off lanes are unspecified (pallas.load's docstring).
    assert not MaskedLoad(ir.View(0), Mask((2,), 2)).produces_value
    assert MaskedLoad(ir.View(0), Mask((2,), 2), Scalar(0)).produces_value
    assert MaskedLoad(ir.View(0)).produces_value


def test_model_catches_a_masked_load_reading_rotated_lanes(plant):
    load_p = pallas_primitives.load_p

    def around(call, in_avals, values, params):
        new_invals, out = call()
        return new_invals, _rolled(out)
    plant(compat.discharge_rules(), load_p, compat.wrap_rule(compat.discharge_rules()[load_p], around))

    @st.composite
    def load_then_store(draw):
        """A masked load whose value is stored back where it came from."""
        refs = (draw(data_refs(("int32",)).filter(lambda r: 0 not in r.shape)),)
        load = draw(statements(refs, ops=(MaskedLoad,)).filter(lambda s: s.produces_value))
        return ir.Case(refs, (load, Swap(load.view, ir.Result(0))), ("run_state",))
    f = _hunt(model_vs_path.ModelMismatch, ("model-vs-path",), load_then_store())
    assert isinstance(f.case.body[0], MaskedLoad) and "expected (model)" in str(f)


def test_model_catches_a_masked_store_landing_on_the_next_element(plant):
    swap_p = pallas_primitives.swap_p
    plant(compat.discharge_rules(), swap_p, rule_returning(swap_p, _rolled))
    f = _hunt(model_vs_path.ModelMismatch, ("model-vs-path",),
              _data("run_state", dtypes=("int32",), ops=(MaskedStore,)), "masked_swap")
    assert isinstance(f.case.body[f.statement], MaskedStore)


def test_invalid_rejected_catches_a_masked_load_without_its_mask_check(plant):
    # masked_load's abstract evaluation stops checking that the mask
    # broadcasts: a mask of the wrong shape is no longer refused cleanly.
    load_p = pallas_primitives.load_p
    real = load_p.abstract_eval

    def unchecked(*avals, args_tree, **params):
        mask = args_tree.unflatten(avals)[2]
        avals = [a.update(shape=()) if a is mask else a for a in avals]
        return real(*avals, args_tree=args_tree, **params)
    plant(load_p, "abstract_eval", unchecked)
    f = _hunt((errors.SilentAcceptance, errors.WrongError), ("invalid-rejected",),
              invalid_programs(mistakes=("load_mask_shape",), max_statements=1,
                               paths=("abstract",)))
    assert f.primitive == "masked_load"


def test_a_semaphore_count_flows_into_a_data_ref():
    from fuzz.ops.semaphore import Read, Signal, Wait
    at1 = ir.View(0, (ir.At((ir.Int(1),)),))
    case = ir.Case((ir.Ref("int16", (2,)), ir.Ref("int32", (3,))), (
        Signal(at1, ir.Int(5)), Read(at1),
        Swap(ir.View(1, (ir.At((ir.Int(2),)),)), ir.Result(1)), Wait(at1, ir.Int(5))))
    assert model.evaluate(case).state[1] == [2, 3, 5]   # ref 1's pattern starts 1 on
    report = oracles.check(case, on_paths=("abstract", "pallas_call"))
    assert not as_on_newest(report.failures), report.failures
    assert next(o for o in report.outcomes if o.path == "pallas_call").state[1] == [2, 3, 5]


def test_a_data_value_and_a_dyn_operand_flow_into_a_count_and_a_data_ref():
    from fuzz.ops.ref.common import Fill
    from fuzz.ops.semaphore import Read, Signal, Wait
    at = lambda r, i: ir.View(r, (ir.At((ir.Int(i),)),))
    case = ir.Case((ir.Ref("regular", (2,)), ir.Ref("int32", (3,))), (
        Get(at(1, 2)), Signal(at(0, 1), ir.Result(0)), Read(at(0, 1)),
        Swap(at(1, 0), Fill(ir.Int(-4, True))), Swap(ir.View(1, (ir.At((ir.Slice(1, 3),)),)),
                                                   Fill(ir.Int(6, True), (2,))),
        Wait(at(0, 1), ir.Int(4))))
    assert "pl.semaphore_signal(r0.at[1], v0)" in emit.kernel_source(case)
    meaning = model.evaluate(case)
    assert meaning.reads == (4,) and meaning.state[1] == [-4, 6, 6]   # r1[2] starts at 4
    report = oracles.check(case)
    assert not as_on_newest(report.failures), report.failures
    assert next(o for o in report.outcomes if o.path == "pallas_call").reads == (4,)
    with pytest.raises(ir.IRError, match="not an int32 scalar"):
        ir.Case(case.refs, (Get(ir.View(1)), Signal(at(0, 1), ir.Result(0))))


def test_model_reinterprets_a_same_width_bitcast_like_numpy_view():
    bc = lambda r, d, *t: ir.View(r, (ir.Bitcast(d), *t))
    case = ir.Case((ir.Ref("int32", (2, 3)), ir.Ref("float32", (2, 3))), (
        Get(bc(0, "float32", ir.At((ir.Int(1),)))),
        Swap(ir.View(1, (ir.At((ir.Int(0),)),)), ir.Result(0)),
        Swap(bc(1, "int32", ir.At((ir.Int(1), ir.Int(2)))), Scalar(1065353216))))
    start = model.initial(case, 0)
    state = model.evaluate(case).state
    assert state[1][0] == start[1].view(np.float32).tolist()
    assert state[1][1][2] == 1.0   # 0x3f800000
    failures = oracles.check(case, on_paths=("abstract", "run_state", "pallas_call")).failures
    # (run_state's jvp cannot store through the bitcast: a known finding)
    assert [f.known for f in failures] in ([], ["run-state-jvp-of-store-through-bitcast"]), failures
    # Shapes stay; 64-bit and bool refs have no same-width bitcast to draw.
    assert ir.view_dtype(case, bc(0, "uint32")) == "uint32"
    from strategies.transforms import same_width_dtypes
    assert same_width_dtypes("bool") == same_width_dtypes("int64") == ()


@premise(not seen_on.applies("unsupported", "bitcast-not-dischargeable-run_state"),
         "run_state cannot discharge a bitcast view (bitcast-not-dischargeable-run_state)")
def test_model_catches_a_get_through_a_bitcast_reading_converted_values(plant):
    # Discharge's bitcast helper planted as a value conversion (astype)
    # instead of a reinterpretation of the same bits.
    from jax._src.state import discharge as state_discharge
    plant(state_discharge, "bitcast", lambda x, dtype: x.astype(dtype))
    f = _hunt(model_vs_path.ModelMismatch, ("model-vs-path",),
              _data("run_state", dtypes=("int32", "float32"), ops=(Get, Swap)))
    assert any(isinstance(t, ir.Bitcast) for s in f.case.body for t in s.view.transforms)


def test_x64_cases_hold_64_bit_refs_only_with_the_flag():
    import pytest
    ref = ir.Ref("int64", (2,))
    with pytest.raises(ir.IRError, match="x64"):
        ir.Case((ref,), (Swap(ir.View(0), Iota("int64", (2,))),))
    case = ir.Case((ref,), (AddUpdate(ir.View(0), Iota("int64", (2,), 20)),),
                   ("abstract", "run_state", "jax_refs"), x64=True)
    report = oracles.check(case)
    lacked = lacked_here(report)   # (jax_refs: jax.empty_ref, from 0.9.1)
    assert not report.failures and len(report.outcomes) == 3 - len(lacked), report.skipped
    assert report.outcomes[1].state[0] == [21, 23]
    assert report.outcomes[1].produced[-1] == ((2,), "int64")
    assert not jax.config.jax_enable_x64   # the flag does not leak out of a case


def test_the_minimizer_drops_x64_where_no_ref_needs_it():
    from fuzz.triage import minimize
    case = ir.Case((ir.Ref("int32", ()),), (Get(ir.View(0)),), x64=True)
    assert not minimize.minimize(case, lambda c: True).case.x64


def test_a_mask_period_below_one_is_a_format_error_not_a_crash():
    import pytest
    from fuzz import serialize
    case = ir.Case((ir.Ref("int32", (2,)),), (MaskedLoad(ir.View(0), Mask((2,), 2)),))
    text = serialize.dumps(case).replace('"period": 2', '"period": 0')
    with pytest.raises(serialize.CaseFormatError, match="mask period 0"):
        serialize.loads(text)


def _declared(case):
    return [r for r in case.refs if r.scoped or r.aliased or r.memory_space]


def test_scoped_aliased_and_smem_data_refs_reach_the_results_and_match_the_model():
    at = lambda *i: ir.View(0 if len(i) == 2 else 1, (ir.At(tuple(ir.Int(k) for k in i)),))
    case = ir.Case((ir.Ref("int32", (2, 3), memory_space="smem", aliased=True),
                    ir.Ref("float32", (3,), scoped=True, memory_space="smem")),
                   (Get(at(1, 2)), Swap(at(1), Iota("float32", (), 4)), Swap(at(0, 0), ir.Result(0))))
    assert paths.not_applicable(case, "run_state") and paths.not_applicable(case, "jax_refs")
    program = paths.program(case, "pallas_call")[0]
    # (operand 1 after dyn is output 0: the call has no ``out``, as the kernel reads no semaphore)
    assert "input_output_aliases={1: 0}" in program and "pltpu.SMEM((3,), jnp.float32)" in program
    report = oracles.check(case)
    assert not report.failures, report.failures
    want = model.evaluate(case).state
    for path in ("pallas_call", "tpu_interpret"):
        state = paths.run(case, path).state
        assert state == {0: want[0], 1: want[1]}, (path, state)


def test_programs_draw_scoped_aliased_and_memory_spaced_data_refs():
    drawn = []

    @given(data_refs(("int8",)))
    @settings(max_examples=200, database=None)
    def collect(ref):
        drawn.append(ref)
    collect()
    assert {r.memory_space for r in drawn} == {None, "vmem", "smem"}
    assert any(r.scoped for r in drawn) and any(r.aliased for r in drawn)
    assert not any(r.scoped and r.aliased for r in drawn)


@plants_rule("run_scoped")
def test_model_catches_run_scoped_discharge_losing_the_updates_of_closed_over_refs(plant):
    run_scoped_p = pallas_primitives.run_scoped_p

    def lost(call, in_avals, values, params):
        new_invals, outs = call()
        return [None] * len(new_invals), outs
    plant(compat.discharge_rules(), run_scoped_p,
          compat.wrap_rule(compat.discharge_rules()[run_scoped_p], lost))
    f = _hunt(model_vs_path.ModelMismatch, ("model-vs-path",),
              _data("pallas_call").filter(lambda c: any(r.scoped for r in c.refs)))
    assert f.path == "pallas_call"
    assert any(r.scoped for r in f.case.refs)


@premise(compat.has_discharge_rule("debug_print"), "jax.debug.print of a ref has no discharge rule")
def test_inspect_runs_the_debug_rules_and_leaves_the_ref_as_it_is():
    from fuzz.ops.ref import Inspect
    ref = ir.Ref("float32", (2,))
    case = ir.Case((ref,), (Swap(ir.View(0), Iota("float32", (2,), 3)),
                            Inspect(ir.View(0)), Inspect(ir.View(0), "print")))
    assert "jax.debug.callback(lambda x: None, r0)" in emit.kernel_source(case)
    report = oracles.check(case)
    # The debug rules run (their write-back of the ref is a known finding)
    # and every evaluating path ends with what the swap stored (run_state's
    # reverse-mode AD fails on every program).
    assert {f.known for f in as_on_newest(report.failures)} <= {
        "debug-discharge-writes-back-its-refs", "eager-debug-callback-of-ref",
        "run-state-reverse-mode-fails"}, report.failures
    assert {f.primitive for f in report.failures if f.oracle == "effects"} == {
        "debug_callback", "debug_print"}
    evaluated = {o.path for o in report.outcomes
                 if o.error is None and paths.MODULES[o.path].EVALUATES}
    assert report.compared["model-vs-path"] == len(evaluated), report.outcomes
    assert {"run_state", "pallas_call", "tpu_interpret"} <= evaluated, report.outcomes


@needs("pl.kernel", "pltpu.TensorCoreMesh")
def test_mesh_kernel_runs_the_kernel_through_the_mpmd_map_rule(plant):
    rules = compat.discharge_rules()
    mpmd_map_p = next(p for p in rules if str(p) == "mpmd_map")
    calls, real = [], rules[mpmd_map_p]

    def counted(*args, **params):
        calls.append(1)
        return real(*args, **params)
    plant(rules, mpmd_map_p, counted)
    at = [ir.View(0, (ir.At((ir.Int(k, k == 1),)),)) for k in range(2)]
    case = ir.Case((ir.Ref("int32", (2,)),), (Get(at[1]), Swap(at[0], ir.Result(0))),
                   ("mesh_kernel",))
    report = oracles.check(case)
    assert [o.path for o in report.outcomes if o.error is None] == ["mesh_kernel"]
    # (0.11.0 and 0.11.1 lose the kernel's writes: a known finding)
    assert all(f.known == "mesh-kernel-writes-lost" for f in report.failures), report.failures
    assert report.compared["model-vs-path"] == 1
    assert calls, "the mpmd_map rule did not run"


def test_addupdate_is_drawn_mostly_through_one_last_indexer_and_sometimes_any_view():
    """The one view addupdate's discharge takes is drawn most; the valid
    views it refuses (two indexers: addupdate-through-two-indexers) too,
    or the fuzzer never meets that bug."""
    from hypothesis import find
    refs = (ir.Ref("float32", (4, 3)),)
    ats = lambda s: sum(isinstance(t, ir.At) for t in s.view.transforms)
    found = find(AddUpdate.draws(refs), lambda s: ats(s) >= 2, settings=settings(max_examples=2000))
    assert ats(found) >= 2 and not found.mistakes(ir.Case(refs, (found,)))

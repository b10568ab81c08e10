"""The control family: loops, conds and pl.when over blocks of statements.
Their meaning in the model, their numbering in the IR, their rendering on
every path, their shrinking, and planted bugs in the cond, while and scan
discharge rules."""
import re

import pytest
from hypothesis import given

from fuzz import compat, emit, ir, model, oracles, paths, serialize
from fuzz.suppressions import seen_on
from fuzz.ops.control import Cond, Loop, When
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.common import Fill, Iota, Scalar
from fuzz.ops.semaphore import Read
from fuzz.oracles import model_vs_path, rewrites
from fuzz.triage import findings, minimize
from hunting import as_on_newest, hunt, lacked_here, plants_rule, premise
from test_strategies import _find
from strategies.programs import programs
from strategies.semaphores import semaphore_shapes

R = ir.Ref("int32", (3,))
AT = [ir.View(0, (ir.At((ir.Int(k),)),)) for k in range(3)]


def _add(k, amount=1):
    return AddUpdate(AT[k], Iota("int32", (), amount))


def _case(*body, refs=(R,), on=ir.PATHS):
    return ir.Case(refs, body, on)


def test_model_runs_a_loop_count_times_and_a_cond_its_branch():
    case = _case(Loop(ir.Int(3, True), (_add(0),)),
                 Loop(ir.Int(-1), (_add(1),), via="while_loop"),
                 Cond(ir.Int(5, True), ((_add(1, 10),), (_add(2, 10),), (_add(2, 20),))),
                 When(ir.Int(0), (_add(0, 100),)))
    # The pattern starts at 1, 2, 3; a switch index past the end takes the last branch.
    assert model.evaluate(case).state == ([4, 2, 23],)
    assert model.evaluate(case).state == model.evaluate(model.unrolled(case)).state


def test_unrolling_keeps_a_branch_not_taken_under_a_static_when():
    # Branch 0 (empty) is taken; branch 1 starts at the same number as the
    # empty one would, and must still be kept, dead, so r0 keeps its role.
    case = _case(Cond(ir.Int(0), ((), (Get(AT[0]), Swap(AT[1], ir.Result(1))), ())))
    flat = model.unrolled(case)
    assert flat.body == (When(ir.Int(0), (Get(AT[0]), Swap(AT[1], ir.Result(1)))),
                         When(ir.Int(0), ()))
    assert model.evaluate(flat).state == model.evaluate(case).state


def test_statements_are_numbered_in_pre_order_and_results_are_scoped():
    get = Get(AT[0])
    loop = Loop(ir.Int(2), (get, Swap(AT[1], ir.Result(1))))
    case = _case(loop, Get(AT[2]), Swap(AT[0], ir.Result(3)))
    assert [type(s) for s in case.statements] == [Loop, Get, Swap, Get, Swap]
    # A value made inside a block ends with it.
    with pytest.raises(ir.IRError, match="not an earlier statement with a value in its scope"):
        _case(loop, Swap(AT[0], ir.Result(1)))
    # A read writes its out slot once: only at the top level.
    sem = ir.Ref("int16", (1,))
    with pytest.raises(ir.IRError, match="only at the top level"):
        ir.Case((sem,), (When(ir.Int(1), (Read(ir.View(0, (ir.At((ir.Int(0),)),))),)),))
    with pytest.raises(ir.IRError, match="scan's length is static"):
        _case(Loop(ir.Int(1, True), (), via="scan"))


def test_removing_and_unwrapping_renumber_the_results_after():
    case = _case(Cond(ir.Int(1), ((_add(0),), (Get(AT[1]), Swap(AT[2], ir.Result(2))))),
                 Get(AT[0]), Swap(AT[1], ir.Result(4)))
    taken = ir.unwrapped(case.body, 0, 1)
    assert taken == (Get(AT[1]), Swap(AT[2], ir.Result(0)), Get(AT[0]), Swap(AT[1], ir.Result(2)))
    fewer = ir.without_statement(case.body, 1)
    assert fewer[1:] == (Get(AT[0]), Swap(AT[1], ir.Result(3)))
    # The value a remaining statement uses cannot go.
    assert ir.without_statement(case.body, 2) is None


def test_control_cases_round_trip_through_json_and_render_nested_functions():
    case = _case(Loop(ir.Int(2), (When(ir.Int(1, True), (_add(0),)),), via="scan",
                      reverse=True, unroll=2),
                 Cond(ir.Int(0, True), ((Swap(AT[1], Scalar(7)),), ())))
    assert serialize.loads(serialize.dumps(case)) == case
    source = emit.kernel_source(case)
    assert "jax.lax.scan(loop0, 0, None, length=2, reverse=True, unroll=2)" in source
    assert "@pl.when(dyn[0] != 0)" in source
    assert "jax.lax.cond(dyn[1] != 0, branch3_1, branch3_0)" in source
    # Every line of a nested statement is that statement's, for blame.
    lines, where = emit.kernel_lines(case)
    assert {n for n in where.values()} == {0, 1, 2, 3, 4}


def _rotation(first):
    """r[0], r[1], r[2] = r[1], r[2], r[0], as statements numbered from
    ``first``: what a loop of them leaves depends on its trip count."""
    gets = tuple(Get(AT[k]) for k in range(3))
    return (*gets, *(Swap(AT[k], ir.Result(first + (k + 1) % 3)) for k in range(3)))


@pytest.mark.parametrize("via", ["fori_loop", "while_loop", "scan"])
def test_every_path_agrees_with_the_model_on_loops_and_conds(via):
    count = ir.Int(2, via != "scan")
    cond = Cond(ir.Int(1, True), ((Swap(AT[0], Scalar(9)),), _rotation(9)))
    case = _case(Loop(count, (*_rotation(1), cond), via=via),
                 When(ir.Int(1, True), (Get(AT[2]), Swap(AT[1], ir.Result(16)))))
    report = oracles.check(case)
    ran = {o.path for o in report.outcomes if o.error is None}
    # An eager while_loop reads dyn (a jax.Ref there) in its cond and body: a
    # known bug up to 0.12.0.1.
    lacked = lacked_here(report)
    eager_while = (via == "while_loop" and "eager" not in lacked
                   and seen_on.applies("known", "eager-while-ref-in-cond-and-body"))
    refused = {p for p, _, _ in report.unsupported}   # (0.7.1's while rule, a cond reading dyn)
    assert {"run_state", "jax_refs", "pallas_call", "tpu_interpret",
            *(() if eager_while else ("eager",))} - lacked - refused <= ran, report.skipped
    assert not [f for f in as_on_newest(report.failures)
                if f.known != "eager-while-ref-in-cond-and-body"], report.failures
    assert eager_while == any(f.known == "eager-while-ref-in-cond-and-body"
                              for f in report.failures), report.failures
    # (unrolled where a path it reruns ran)
    assert report.compared.get("control-unrolled") or not ran & set(paths.having("RERUN"))


@premise(compat.has_discharge_rule("shard_map"), "shard_map has no discharge rule")
def test_shard_map_takes_the_refs_as_arguments_outside_kernels_only():
    from fuzz.ops.control import Wrap
    case = _case(Wrap("shard_map", (Get(ir.View(0, (ir.At((ir.Int(1, True),)),))),
                                    Swap(AT[0], ir.Result(1)))))
    assert "def wrap0(dyn, r0):" in emit.kernel_source(case)
    report = oracles.check(case)
    if seen_on.applies("known", "shard-map-of-a-ref-fails-reshard-assertion"):
        # (0.9.0 and 0.9.0.1 trace no shard_map of a ref: that bug, and nothing else)
        assert {f.known for f in report.failures} == {
            "shard-map-of-a-ref-fails-reshard-assertion"}, report.failures
        return
    lacked = lacked_here(report)   # (jax_refs: jax.empty_ref, from 0.9.1)
    assert {o.path for o in report.outcomes if o.error is None} == {
        "abstract", "run_state", "jax_refs"} - lacked, report.outcomes
    assert set(report.skipped) == {"eager", "nested", "pallas_call", "mesh_kernel",
                                   "tpu_interpret", "tpu_interpret_eager"} | lacked
    kept_ref = "shard-map-partial-discharge-discharges-kept-ref"   # (from 0.7.2)
    assert {f.known for f in report.failures} == (
        {kept_ref} if seen_on.applies("known", kept_ref) else set()), report.failures


def test_a_nested_run_scoped_runs_inside_kernels_and_agrees_with_the_model():
    """pl.run_scoped with nothing to allocate, in a loop: its rule discharges
    the refs it closes over, on every path that runs a kernel."""
    from fuzz.ops.control import Wrap
    from fuzz.ops.semaphore import Read, Signal, Wait
    data = _case(Loop(ir.Int(2, True), (Wrap("run_scoped", (
        Get(AT[1]), Swap(AT[0], ir.Result(2)), Swap(AT[1], Fill(ir.Int(4, True))))),)))
    assert "pl.run_scoped(wrap1)" in emit.kernel_source(data)
    report = oracles.check(data)
    lacked = lacked_here(report)
    ran = {o.path for o in report.outcomes if o.error is None}
    assert ran == {"abstract", "nested", "pallas_call", "mesh_kernel", "tpu_interpret"} - lacked, \
        report.outcomes
    assert set(report.skipped) - lacked <= {"run_state", "jax_refs", "eager",
                                            "tpu_interpret_eager"} <= set(report.skipped), \
        report.skipped
    assert not as_on_newest(report.failures), report.failures
    assert report.compared["model-vs-path"] == len(ran - {"abstract"})
    assert report.compared.get("control-unrolled")
    sem = ir.View(1, (ir.At((ir.Int(0),)),))
    counts = _case(Loop(ir.Int(2, True), (Wrap("run_scoped", (
        Signal(sem, ir.Int(3)), Wait(sem, ir.Int(2)))),)), Read(sem),
        refs=(R, ir.Ref("regular", (1,))), on=("abstract", "pallas_call"))
    report = oracles.check(counts)
    assert not as_on_newest(report.failures) and report.compared["model-vs-path"] == 1, \
        report.failures


def test_programs_draw_every_control_statement_nested():
    # Of the control ops and a few others: programs() of every op draws them
    # too, but rarely enough to take a minute to find.
    from fuzz.ops.semaphore import Signal
    control = programs(ops=(Loop, Cond, When, Get, Swap, Signal, Read))
    find = _find
    find(_loops_over_data(), lambda c: any(isinstance(s, Loop) and s.via == "scan" and s.reverse
                                           for s in c.statements))
    find(programs(max_semaphores=0, ops=(Loop, Get, Swap)), lambda c: any(
        isinstance(s, Loop) and s.via == "while_loop" and s.count.dynamic for s in c.statements))
    find(control, lambda c: any(isinstance(s, Cond) and len(s.branches) == 3
                                for s in c.statements))
    find(control, lambda c: any(isinstance(s, When) for s in c.statements))
    # A control statement inside another, and a value used inside a block.
    find(control, lambda c: any(s.block_fields and any(
        t.block_fields for b in s.blocks() for t in b) for s in c.body))
    find(control, lambda c: any(
        s.block_fields and any(ir.walk(s.blocks(), ir.Result)) for s in c.body))


def test_no_control_statements_below_max_depth():
    @given(programs(max_depth=0))
    def prop(case):
        assert not any(s.block_fields for s in case.statements)
    prop()


def test_minimizer_unwraps_a_loop_that_is_not_needed():
    case = _case(Loop(ir.Int(3, True), (_add(0), _add(1))), on=("run_state",))
    still = minimize.minimize(case, lambda c: any(isinstance(s, AddUpdate) and s.view == AT[1]
                                                  for s in c.statements)).case
    assert still.body == (_add(1),)


# --- planted bugs in the control-flow discharge rules ---------------------------

def _control(op, *on):
    """Data programs of ``op`` over gets, swaps and addupdates, run on ``on``."""
    return programs(max_semaphores=0, data_dtypes=("int32", "float32"), max_statements=3,
                    paths=on, x64=False, scoped=False, grid=False, ops=(op, Get, Swap, AddUpdate),
                    transforms=("at",))


def _other_branch(rule):
    """The cond rule discharging the branches in reverse order: a two-way
    cond takes the branch it should not."""
    def wrong(*args, **params):
        return rule(*args, **dict(params, branches=tuple(reversed(params["branches"]))))
    return wrong


def _one_fewer_iteration(rule):
    """The scan rule discharging a scan one iteration short."""
    def wrong(*args, **params):
        return rule(*args, **dict(params, length=max(params["length"] - 1, 0)))
    return wrong


def _loop_updates_dropped(call, in_avals, values, params):
    new_invals, outs = call()
    return [None] * len(new_invals), outs


def _cond_p():
    from jax._src.lax.control_flow import conditionals
    return conditionals.cond_p


def _loop_p(name):
    from jax._src.lax.control_flow import loops
    return {"scan": loops.scan_p, "while": loops.while_p}[name]


def _has(case, kind, test=lambda s: True):
    return any(isinstance(s, kind) and test(s) for s in case.statements)


@plants_rule("cond")
def test_model_catches_cond_discharge_taking_the_other_branch(plant):
    cond_p = _cond_p()
    plant(compat.discharge_rules(), cond_p, _other_branch(compat.discharge_rules()[cond_p]))
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), _control(Cond, "run_state"), statements=2)
    # (a lax.switch of three branches shows the plant as well as a cond)
    assert _has(f.case, Cond, lambda s: len(s.branches) >= 2), f.case
    assert len(f.case.statements) <= 3, f.case


@plants_rule("while")
def test_model_catches_while_discharge_dropping_the_loop_updates(plant):
    while_p = _loop_p("while")
    plant(compat.discharge_rules(), while_p,
          compat.wrap_rule(compat.discharge_rules()[while_p], _loop_updates_dropped))
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), _control(Loop, "run_state"), statements=2)
    assert _has(f.case, Loop, lambda s: s.primitive == "while" and s.count.value >= 1), f.case
    assert len(f.case.statements) <= 3, f.case
    # Its root cause is the loop's own rule: no statement in it alone is wrong.
    assert findings.root_cause(f).startswith("rule:discharge:while:"), findings.root_cause(f)


@plants_rule("scan")
def test_unrolled_catches_scan_discharge_one_iteration_short(plant):
    scan_p = _loop_p("scan")
    plant(compat.discharge_rules(), scan_p, _one_fewer_iteration(compat.discharge_rules()[scan_p]))
    f = hunt(rewrites.UnrolledMismatch, ("control-unrolled",), _control(Loop, "pallas_call"),
             statements=2)
    assert re.search("results differ when every loop and cond is unrolled", f.message)
    assert _has(f.case, Loop, lambda s: s.primitive == "scan" and s.count.value >= 1), f.case
    assert len(f.case.statements) <= 3, f.case



# --- scans over refs (xs): the block sees one slice a step ------------------------

M = ir.Ref("int32", (3, 2))
ROW = ir.View(1, (ir.STEP,))      # the step's row of ref 1, as the block names it


def _scan_xs(*body, reverse=False, length=3):
    return Loop(ir.Int(length), tuple(body), via="scan", reverse=reverse, xs=(1,))


def test_model_gives_each_step_its_slice_in_order_or_reversed():
    # M (ref 1, its pattern starting 1 on) has rows [2, 3], [4, 5], [6, 7]:
    # r0[0] = row[0], then row = [7, 8], so r0[0] ends as the first element
    # of the last row visited.
    body = (Get(ir.View(1, (ir.STEP, ir.At((ir.Int(0),))))),
            Swap(ir.View(0, (ir.At((ir.Int(0),)),)), ir.Result(1)),
            Swap(ROW, Iota("int32", (2,), 7)))
    for reverse, last_row in ((False, 6), (True, 2)):
        case = _case(_scan_xs(*body, reverse=reverse), refs=(R, M))
        state = model.evaluate(case).state
        assert state == ([last_row, 2, 3], [[7, 8]] * 3), state
        assert model.evaluate(model.unrolled(case)).state == state


def test_a_scan_over_refs_renders_the_slices_by_the_refs_names():
    case = _case(_scan_xs(Swap(ROW, Iota("int32", (2,), 1)), reverse=True), refs=(R, M))
    assert serialize.loads(serialize.dumps(case)) == case
    source = emit.kernel_source(case)
    assert "def loop0(carry, r1):" in source and "r1[...] = " in source
    assert "jax.lax.scan(loop0, 0, r1, length=3, reverse=True)" in source
    two = _case(Loop(ir.Int(3), (Swap(ROW, Iota("int32", (2,), 1)),), via="scan", xs=(0, 1)),
                refs=(R, M))
    assert "r0, r1 = x" in emit.kernel_source(two)
    assert "jax.lax.scan(loop0, 0, (r0, r1,), length=3)" in emit.kernel_source(two)


def test_a_scans_slices_are_well_formed_or_refused_as_data():
    row = Swap(ROW, Iota("int32", (2,), 1))
    with pytest.raises(ir.IRError, match="the number of steps, 2, as leading axis"):
        _case(_scan_xs(row, length=2), refs=(R, M))
    with pytest.raises(ir.IRError, match="only a scan takes refs as xs"):
        _case(Loop(ir.Int(3), (row,), xs=(1,)), refs=(R, M))
    # Inside, the ref goes by its slice; outside, there is no slice to name.
    with pytest.raises(ir.IRError, match="takes the slice"):
        _case(_scan_xs(Swap(ir.View(1, (ir.At((ir.Int(0),)),)), Iota("int32", (2,), 1))),
              refs=(R, M))
    with pytest.raises(ir.IRError, match="takes the slice"):
        _case(row, refs=(R, M))
    with pytest.raises(ir.IRError, match="slices already"):
        _case(_scan_xs(Loop(ir.Int(2), (), via="scan", xs=(1,))), refs=(R, M))


def test_minimizer_unwraps_a_scan_over_refs_into_its_first_step():
    body = (Swap(ROW, Iota("int32", (2,), 1)),)
    case = _case(_scan_xs(*body, reverse=True), refs=(R, M), on=("run_state",))
    # In reverse, the first step takes the last row.
    assert ir.unwrapped(case.body, 0, 0) == (
        Swap(ir.View(1, (ir.At((ir.Int(2),)),)), Iota("int32", (2,), 1)),)
    flat = minimize.minimize(case, lambda c: any(isinstance(s, Swap) for s in c.statements)).case
    assert [type(s) for s in flat.body] == [Swap], flat


def test_every_path_agrees_with_the_model_on_a_scan_over_refs():
    body = (Get(ir.View(1, (ir.STEP, ir.At((ir.Int(1),))))),
            AddUpdate(ir.View(0, (ir.At((ir.Int(2),)),)), ir.Result(1)),
            Swap(ROW, Iota("int32", (2,), 7)))
    case = _case(_scan_xs(*body, reverse=True), refs=(R, M))
    report = oracles.check(case, on_paths=("abstract", "run_state", "jax_refs", "eager",
                                           "nested", "pallas_call", "mesh_kernel"))
    lacked = lacked_here(report)
    assert set(report.skipped) == lacked, report.skipped
    assert not as_on_newest(report.failures), report.failures
    assert report.compared.get("model-vs-path", 0) == 6 - len(lacked - {"abstract"})
    assert report.compared["control-unrolled"]


def test_programs_draw_scans_over_refs():
    # Loops and data statements only: a reversed scan over a ref is rare
    # among all programs (finding one took 14 to 120 s), not among these.
    _find(_loops_over_data(), lambda c: any(isinstance(s, Loop) and s.xs and s.reverse
                                            for s in c.statements))


def _loops_over_data():
    return programs(ops=(Loop, Get, Swap), max_semaphores=0)


def _slices_written_back_a_step_late(rule):
    """The scan rule writing each step's slice of an xs ref back at the next
    step's place (its ``dynamic_update_index_in_dim`` off by one, wrapping
    around): every xs ref comes back rotated by one along its leading axis."""
    import jax.numpy as jnp
    from jax._src.state.types import AbstractRef

    def wrong(*args, **params):
        consts, carry, xs = map(len, params["ft_in"].unpack())
        rotated = [k for k in range(consts + carry, consts + carry + xs)
                   if isinstance(params["jaxpr"].in_avals[k], AbstractRef)]
        new_invals, outs = rule(*args, **params)
        return [jnp.roll(v, 1, 0) if k in rotated and v is not None else v
                for k, v in enumerate(new_invals)], outs
    return wrong


@pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason="JAX 0.10's scan has no ft_in")
def test_model_catches_scan_discharge_writing_slices_back_out_of_place(plant):
    scan_p = _loop_p("scan")
    plant(compat.discharge_rules(), scan_p,
          _slices_written_back_a_step_late(compat.discharge_rules()[scan_p]))
    # Refs a scan can slice (a leading axis of 2 or more), which most drawn refs are not.
    sliceable = programs(max_semaphores=0, data_dtypes=("int32", "float32"), max_statements=3,
                         data_shapes=semaphore_shapes(min_dims=1, min_side=2, max_side=3),
                         paths=("run_state",), x64=False, scoped=False, grid=False,
                         ops=(Loop, Get, Swap, AddUpdate), transforms=("at",))
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), sliceable, statements=1)
    assert _has(f.case, Loop, lambda s: s.xs and s.count.value >= 2), f.case
    assert len(f.case.statements) <= 3, f.case


# --- pltpu.emit_pipeline: a step per slice, inside kernels ------------------------

needs_pipeline_rule = pytest.mark.skipif(not compat.has_discharge_rule("emit_pipeline"),
                                         reason="this JAX has no emit_pipeline primitive")


def _pipeline(*body, inline=False):
    from fuzz.ops.control import Pipeline
    return Pipeline(3, (1,), tuple(body), inline)


def test_a_pipeline_renders_its_blocks_by_the_refs_names_under_an_abstract_tpu():
    case = _case(_pipeline(Swap(ROW, Iota("int32", (2,), 7))), refs=(R, M))
    assert serialize.loads(serialize.dumps(case)) == case
    source = emit.kernel_source(case)
    assert "def pipe0(r1_in, r1):" in source and "r1[...] = r1_in[...]" in source
    assert "'TPU v6 lite'" in source
    # (the flag that chooses the primitive exists from 0.10.2)
    assert ("use_emit_pipeline_primitive(True)" in source) == compat.has(
        "jax._src.config.use_emit_pipeline_primitive")
    assert ("pltpu.emit_pipeline(pipe0, grid=(3,), in_specs=[pl.BlockSpec((None, 2), "
            "lambda i: (i, 0))], out_specs=[pl.BlockSpec((None, 2), lambda i: (i, 0))])(r1, r1)"
            ) in source
    with pytest.raises(ir.IRError, match="VMEM, not SMEM"):
        _case(_pipeline(), refs=(R, ir.Ref("int32", (3, 2), memory_space="smem")))
    # Its steps are a scan's over the same refs; unwrapped, its first step.
    assert model.evaluate(case).state == model.evaluate(
        _case(_scan_xs(Swap(ROW, Iota("int32", (2,), 7))), refs=(R, M))).state


@needs_pipeline_rule
@pytest.mark.parametrize("inline", [False, True])
def test_kernel_paths_agree_with_the_model_on_a_pipeline(inline):
    body = (Get(ir.View(1, (ir.STEP, ir.At((ir.Int(1),))))),
            Swap(ir.View(1, (ir.STEP, ir.At((ir.Int(0),)))), ir.Result(1)))
    case = _case(_pipeline(*body, inline=inline), refs=(R, M),
                 on=("abstract", "pallas_call", "nested", "mesh_kernel", "run_state"))
    report = oracles.check(case)
    assert report.skipped == {"run_state": "emit_pipeline exists only inside Pallas TPU kernels"}
    assert not report.failures, report.failures
    assert report.compared["model-vs-path"] == 3 and report.compared["control-unrolled"]


def _pipeline_writes_dropped(call, in_avals, values, params):
    new_invals, outs = call()
    return [None] * len(new_invals), outs


@needs_pipeline_rule
def test_model_catches_emit_pipeline_discharge_dropping_its_writes(plant):
    from jax._src.pallas.mosaic import pipeline
    from fuzz.ops.control import Pipeline
    rule = compat.discharge_rules()[pipeline.emit_pipeline_p]
    plant(compat.discharge_rules(), pipeline.emit_pipeline_p,
          compat.wrap_rule(rule, _pipeline_writes_dropped))
    # Refs a pipeline can slice: a leading axis, in VMEM.
    sliceable = programs(max_semaphores=0, data_dtypes=("int32", "float32"), max_statements=3,
                         data_shapes=semaphore_shapes(min_dims=2, min_side=1, max_side=3),
                         memory_spaces=(None,), paths=("pallas_call",), x64=False,
                         scoped=False, grid=False, ops=(Pipeline, Get, Swap), transforms=("at",))
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), sliceable, statements=1)
    assert _has(f.case, Pipeline, lambda s: not s.inline), f.case
    assert len(f.case.statements) <= 3, f.case


@premise(seen_on.applies("known", "masked-ops-static-int-index"),
         "a masked store to a 0-D slice works (masked-ops-static-int-index)")
def test_an_unrolled_program_that_trips_a_known_bug_is_not_compared(monkeypatch):
    """Unrolled, a masked store to a step's 0-D slice is pltpu.store(r0.at[0]),
    which a known bug breaks (masked-ops-static-int-index); as written the
    scan runs: nothing to compare, and no finding. Without the check, the
    oracle reports the rewrite's error as the scan's."""
    from fuzz.ops.ref import MaskedStore
    case = _case(Loop(ir.Int(2), (MaskedStore(ir.View(0, (ir.STEP,)), Iota("int32", (), 1)),),
                      "scan", xs=(0,)), refs=(ir.Ref("int32", (2,)),), on=("pallas_call",))
    assert not oracles.check(case).failures
    monkeypatch.setattr(rewrites, "_known_failure", lambda case, path: False)
    assert [f.oracle for f in oracles.check(case).failures] == ["control-unrolled"]


@premise(seen_on.applies("known", "emit-pipeline-closed-over-ref"),
         "emit-pipeline-closed-over-ref does not fail here")
def test_a_copy_of_closed_over_refs_in_a_pipeline_body_is_the_known_closed_over_ref_bug():
    """The emit_pipeline primitive hands a closed-over ref to the body's
    primitives as a value: a copy between two such refs is refused by
    dma_start ('DMA source/destination arguments must be Refs'), the known
    bug's face, not a new finding (two 90 s campaigns, seed 1, filed it)."""
    from fuzz.ops.control import Pipeline
    from fuzz.ops.dma import DmaStart, DmaWait
    data = ir.Ref("float32", (2,))
    case = ir.Case((ir.Ref("int32", (3, 2)), ir.Ref("dma", ()), data, data), (Pipeline(3, (0,), (
        DmaStart(ir.View(2), ir.View(3), ir.View(1)),
        DmaWait(ir.View(2), ir.View(3), ir.View(1)))),), ("pallas_call",))
    failures = oracles.check(case).failures
    assert failures and {f.known for f in failures} == {"emit-pipeline-closed-over-ref"}, failures


@premise(seen_on.applies("known", "shard-map-dynamic-update-sharding"),
         "shard-map-dynamic-update-sharding does not fail here")
def test_a_store_into_a_ref_a_shard_map_only_read_is_the_known_sharding_bug():
    """The map's discharge gives every ref it takes a sharded new value:
    a later pltpu.store into one it only read fails on the sharding (a
    60 s main job filed two such findings as new, for bool and int64)."""
    from fuzz.ops.control import Wrap
    from fuzz.ops.ref import MaskedStore
    case = ir.Case((ir.Ref("int32", (2,)),), (
        Wrap("shard_map", (Get(ir.View(0)),)), MaskedStore(ir.View(0), Iota("int32", (2,)))),
        ("abstract",))
    failures = oracles.check(case).failures
    assert failures and {f.known for f in failures} == {"shard-map-dynamic-update-sharding"}, failures


def test_a_function_called_on_views_sees_the_rows_it_is_given():
    """jax.jit(f)(r.at[i]) with i from dyn: the block names the row by the
    ref's name, the model adds to that row only, and every path that runs
    the function agrees; a function that cannot take views is refused as
    data, and the minimizer closes the row over again."""
    from fuzz.ops.control import Wrap
    rows = ir.Ref("int32", (3, 2))
    case = _case(Wrap("jit", (AddUpdate(ir.View(0, (ir.STEP,)), Iota("int32", (2,), 1)),),
                      (0,), ir.Int(1, True)), refs=(rows,))
    source = emit.kernel_source(case)
    assert "def wrap0(r0):" in source and "jax.jit(wrap0)(r0.at[dyn[0]])" in source, source
    assert model.evaluate(case).state == ([[1, 2], [4, 6], [5, 6]],)   # (from 1, 2, ...)
    report = oracles.check(case)
    lacked = lacked_here(report)
    ran = {o.path for o in report.outcomes if o.error is None}
    assert {"run_state", "jax_refs", "eager", "pallas_call"} - lacked <= ran, report.outcomes
    assert not [f for f in as_on_newest(report.failures) if f.known is None], report.failures
    assert report.compared["model-vs-path"] >= len(ran - {"abstract"}) - 1
    # Indexed again inside, under vmap: JAX's get batching rule takes one indexer.
    again = _case(Wrap("jit", (Get(ir.View(0, (ir.STEP, ir.At((ir.Int(0),)))),),), (0,),
                       ir.Int(1)), refs=(rows,))
    assert "indexers not supported" in again.statements[0].refused_under(
        "vmap", paths.MODULES["jax_refs"])
    assert not [f for f in as_on_newest(oracles.check(again).failures) if f.known is None]
    with pytest.raises(ir.IRError, match="takes no views"):
        _case(Wrap("custom_vjp", (), (0,), ir.Int(1)), refs=(rows,))
    with pytest.raises(ir.IRError, match="not all of which have that row"):
        _case(Wrap("jit", (), (0,), ir.Int(3)), refs=(rows,))
    closed = next(case.statements[0].simpler(case))
    assert closed.xs == () and closed.body == (AddUpdate(ir.View(0, (ir.At((ir.Int(1),)),)),
                                                          Iota("int32", (2,), 1)),)

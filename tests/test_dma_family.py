"""The DMA family: local async copies between data refs, counted on DMA
semaphores by bytes (fuzz/ops/dma/common.py cites JAX's docs), through the
real discharge rules and the TPU interpreter."""
import dataclasses
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck

from fuzz import compat, emit, ir, model, oracles, serialize
from fuzz.ops import dma, ref
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.dma.order import waited_before_use
from fuzz.ops.ref import Get, Swap
from fuzz.ops.ref.common import Iota, Scalar
from fuzz.ops.semaphore import Read
from fuzz.oracles import interpreter, model_vs_path
from fuzz.suppressions import seen_on
from hunting import as_on_newest, hunt, lacked_here, premise
from strategies.programs import programs
from strategies.semaphores import semaphore_shapes

SEM, SEMS = ir.Ref("dma", ()), ir.Ref("dma", (2,))
F = ir.Ref("float32", (2, 3))
ROW0, ROW1 = (ir.View(1, (ir.At((ir.Int(i),)),)) for i in (0, 1))
DST = ir.View(2, (ir.At((ir.Int(1),)),))


def _case(*body, refs=(SEM, F, F)):
    return ir.Case(refs, body)


def test_a_copy_moves_its_view_and_counts_its_bytes_until_waited():
    m = model.evaluate(_case(DmaStart(ROW0, DST, ir.View(0)), Read(ir.View(0)),
                             DmaWait(ROW0, DST, ir.View(0)), Read(ir.View(0))))
    assert m.undefined is None
    assert m.reads == (12, 0)                       # 3 float32s in flight, then none
    assert m.state[1][0] == [2.0, 3.0, 4.0]        # ref 1's pattern, from 1 + 1
    assert m.state[2] == [[3.0, 4.0, 5.0], [2.0, 3.0, 4.0]]


def test_a_src_sem_counts_the_source_and_each_wait_takes_its_own():
    sems = ir.View(0, (ir.At((ir.Int(0),)),)), ir.View(0, (ir.At((ir.Int(1),)),))
    start = DmaStart(ROW0, DST, *sems)
    m = model.evaluate(_case(start, DmaWait(ROW0, DST, *sems, "wait_write"),
                             Read(sems[0]), Read(sems[1]),
                             DmaWait(ROW0, DST, *sems, "wait_read"), refs=(SEMS, F, F)))
    assert m.reads == (0, 12) and m.undefined is None


def test_the_model_says_which_programs_race_deadlock_or_leave_a_copy_in_flight():
    start, wait = DmaStart(ROW0, DST, ir.View(0)), DmaWait(ROW0, DST, ir.View(0))
    touch = Get(ir.View(2))
    assert "racy" in model.evaluate(_case(start, touch, wait)).undefined
    assert model.evaluate(_case(start, Get(ir.View(1)), wait)).undefined is None  # reads its source
    assert "racy" in model.evaluate(_case(start, Swap(ROW0, Iota("float32", (3,))), wait)).undefined
    assert "blocks forever" in model.evaluate(_case(wait)).undefined
    unwaited = model.evaluate(_case(start))
    # Defined but for what the copy in flight writes (r2[1]) and counts.
    assert unwaited.verdict == "unwaited" and unwaited.undefined is None
    assert unwaited.unknown == {(2, 3), (2, 4), (2, 5), (0, 0)}


def test_drawn_copies_are_waited_on_before_use_and_in_their_own_block():
    start, wait = DmaStart(ROW0, DST, ir.View(0)), DmaWait(ROW0, DST, ir.View(0))
    touch = Get(ir.View(2))
    assert waited_before_use((start, touch), (SEM, F, F)) == (start, wait, touch)
    assert waited_before_use((wait, start), (SEM, F, F)) == (start, wait)   # an orphan goes


@settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(programs(ops=(*dma.OPS, *ref.OPS), max_semaphores=0))
def test_drawn_copy_programs_are_well_formed_and_round_trip(case):
    assert serialize.loads(serialize.dumps(case)) == case
    emit.kernel_source(case)
    undefined = model.evaluate(case).undefined
    assert undefined is None or undefined.startswith(("racy", "unwaited", "statement")), undefined


# (0.7.0 to 0.9.2 cannot copy an operand in no memory space: a known finding)
@pytest.mark.parametrize("space", [None, "vmem"])
def test_a_copy_runs_on_every_kernel_path_as_the_model_says(space):
    data = dataclasses.replace(F, memory_space=space)
    case = _case(DmaStart(ROW0, DST, ir.View(0), api="async_copy", priority=1),
                 DmaWait(ROW0, DST, ir.View(0)), refs=(SEM, data, data))
    report = oracles.check(case)
    assert not as_on_newest(report.failures), report.failures
    # (0.6.2's abstract path takes no ref in a memory space)
    assert {"abstract", "pallas_call", "tpu_interpret"} - lacked_here(report) <= {
        o.path for o in report.outcomes}


def _start_writing_nothing(rule):
    """dma_start's discharge rule with its copy lost: the destination's
    new value is its old one (the semaphore still counts)."""
    def wrong(*args, **params):
        new_vals, outs = rule(*args, **params)
        in_vals = compat.rule_operands(args)[1]
        return [v if v is None or v.dtype != jnp.float32 else in_vals[k] * 0 + in_vals[k]
                for k, v in enumerate(new_vals)], outs
    return wrong


@pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason=(
    "JAX 0.10 registers dma_start's rule as a partial discharge rule "
    "(state_discharge._partial_discharge_rules), which this plant does not wrap"))
def test_model_catches_a_copy_discharged_without_its_data(plant):
    rules = compat.discharge_rules()
    from jax._src.pallas.mosaic import primitives as tpu_primitives
    plant(rules, tpu_primitives.dma_start_p, _start_writing_nothing(rules[tpu_primitives.dma_start_p]))
    copies = programs(ops=(DmaStart, DmaWait, Swap, Get), max_semaphores=0, data_dtypes=("float32",),
                      paths=("pallas_call",), grid=False, scoped=False, x64=False,
                      transforms=("at",))   # no known bug of other transforms in the way
    # A copy needs three refs: its semaphore, a source and a destination.
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), copies, statements=2, refs=3)
    assert f.primitive == "dma_start", f
    assert [type(s) for s in f.case.body] == [DmaStart, DmaWait], f.case
    assert all(len(r.shape) <= 2 for r in f.case.refs), f.case


def test_a_read_of_a_count_a_copy_in_flight_moves_has_no_expected_value():
    """On hardware such a read races with the copy, and JAX's docs say the
    count a DMA adds may not be exact: the model gives it no value, and the
    paths (which count elements, where the TPU interpreter counts bytes)
    are not held to one. A read once the copy is waited on still counts."""
    case = _case(DmaStart(ROW0, DST, ir.View(0)), Read(ir.View(0)),
                 DmaWait(ROW0, DST, ir.View(0)), Read(ir.View(0)))
    assert model.evaluate(case).unknown_reads == {0}
    report = oracles.check(dataclasses.replace(case, paths=("abstract", "run_state", "pallas_call")))
    assert report.compared.get("model-vs-path") and not report.failures, report.failures


@pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason=(
    "JAX 0.10 registers dma_wait's rule as a partial discharge rule, which this plant does not wrap"))
def test_a_wait_that_leaves_its_count_is_caught_beside_a_read_in_flight(plant):
    """Beside the read no path is held to, a wait whose discharge takes
    nothing off its semaphore shows in the read after it."""
    from jax._src.pallas.mosaic import primitives as tpu_primitives
    rules = compat.discharge_rules()
    plant(rules, tpu_primitives.dma_wait_p, compat.wrap_rule(
        rules[tpu_primitives.dma_wait_p],
        lambda call, in_avals, values, params: ([None] * len(call()[0]), call()[1])))
    case = _case(DmaStart(ROW0, DST, ir.View(0)), Read(ir.View(0)),
                 DmaWait(ROW0, DST, ir.View(0)), Read(ir.View(0)), refs=(SEM, F, F))
    failures = oracles.check(dataclasses.replace(case, paths=("pallas_call",)),
                             oracles=("model-vs-path",)).failures
    assert [f.message.split(",")[0] for f in failures] == ["read 1 is 3"], failures


# --- the TPU interpreter under its options -------------------------------------

def _interpreted(*names, ops=(DmaStart, DmaWait, Swap, Get)):
    """Copy programs for the TPU interpreter: rows of two or more elements
    (a copy of one element shows no misplaced data), of a few statements."""
    return programs(ops=ops, max_semaphores=0, data_dtypes=("float32",), paths=names,
                    grid=False, scoped=False, x64=False, transforms=("at",), max_statements=3,
                    data_shapes=semaphore_shapes(min_dims=1, min_side=2, max_side=3))


def _mutated(strategy, mutation):
    """Programs of ``strategy`` with ``mutation`` made to their first copy wait."""
    from fuzz.ops.dma.order import mutated, top_waits
    return strategy.filter(lambda c: top_waits(c.body)).map(lambda c: dataclasses.replace(
        c, body=mutated(c.body, mutation, top_waits(c.body)[0])))


@premise(hasattr(getattr(compat.tpu_interpreter(), "DMA", None), "execute_read"),
         "the TPU interpreter has no DMA.execute_read to plant into")
def test_interpret_options_catch_eager_dmas_moving_the_wrong_elements(plant):
    ipc = compat.tpu_interpreter()
    read = ipc.DMA.execute_read

    def rolled(self):   # eager mode only: the data read comes out rotated by one
        read(self)
        if ipc._get_shared_memory().dma_execution_mode == "eager":
            self.data = np.roll(np.asarray(self.data).reshape(-1), 1).reshape(np.shape(self.data))
    plant(ipc.DMA, "execute_read", rolled)
    f = hunt(interpreter.InterpretOptionsMismatch, ("interpret-options",),
             _interpreted("tpu_interpret", "tpu_interpret_eager", ops=(DmaStart, DmaWait)),
             statements=2, refs=3)
    assert f.path == "tpu_interpret/tpu_interpret_eager", f
    assert [type(s) for s in f.case.body] == [DmaStart, DmaWait], f.case


@premise(compat.probe("jax._src.pallas.mosaic.interpret.race_detection_state"),
         "the race detector has no module of its own to plant into")
def test_race_detection_catches_a_detector_that_misses_kernel_stores(plant):
    from jax._src.pallas.mosaic.interpret import race_detection_state
    plant(race_detection_state.RaceDetectionState, "check_write", lambda *a, **k: None)
    f = hunt(interpreter.RaceDetectionMismatch, ("race-detection",),
             _mutated(_interpreted("tpu_interpret_eager"), "late_wait"), statements=3, refs=3)
    assert "misses a race" in f.message, f
    assert "racy" in model.evaluate(f.case).undefined


@premise(hasattr(compat.tpu_interpreter(), "_validate"),
         "the TPU interpreter has no _validate to plant into")
def test_left_over_counts_catch_an_interpreter_silent_at_exit(plant):
    ipc = compat.tpu_interpreter()
    # silent: it gives back the token it takes (older releases pass the device id alone)
    plant(ipc, "_validate", lambda *token_and_device: token_and_device[0]
          if len(token_and_device) == 2 else None)
    f = hunt(interpreter.LeftoverMissed, ("left-over-counts",),
             _mutated(_interpreted("tpu_interpret_eager"), "drop_wait"), statements=1, refs=3)
    assert [type(s) for s in f.case.body] == [DmaStart], f.case


def test_a_copy_through_a_negative_static_index_is_refused_as_the_table_lists():
    """From 0.12.1 the TPU interpreter refuses a negative static index as out
    of bounds (TPU does not normalize one); through a copy's view it raises
    IndexError, not a load's ValueError (a main job filed it as new,
    valid-runs-any-5bdb8eea, through r0.at[:, :, -1].at[:, 0])."""
    entry = "tpu-interpret-negative-static-index-out-of-bounds"
    at = (ir.At((ir.Slice(), ir.Slice(), ir.Int(-1))), ir.At((ir.Slice(), ir.Int(0))))
    case = ir.Case((ir.Ref("int32", (1, 2, 3)), ir.Ref("int32", (1,)), ir.Ref("dma", ())), (
        DmaStart(ir.View(0, at), ir.View(1), ir.View(2)),
        DmaWait(ir.View(0, at), ir.View(1), ir.View(2))), ("tpu_interpret",))
    report = oracles.check(case)
    lacked_here(report)
    assert not report.failures, report.failures
    refused = [e.id for _, e, _ in report.unsupported]
    assert refused == ([entry] if seen_on.applies("unsupported", entry) else []), refused


def test_a_debug_print_of_a_64_bit_ref_on_a_mesh_is_the_x64_context_bug():
    """The TPU interpreter's callbacks on a 2-device mesh run where the
    thread-local jax.enable_x64 does not reach: a remote copy of 64-bit data
    fails so (the entry's example), and so does a jax.debug.print of a
    float64 ref (a main job filed it as new, valid-runs-any-72007fcb); on
    one device it runs."""
    entry = "tpu-interpret-remote-copy-of-64-bit-data"
    if not seen_on.applies("known", entry):
        pytest.skip(f"{entry} is not live here")
    f64 = ir.Ref("float64", (2,))
    on_mesh = ir.Case((f64,), (ref.Inspect(ir.View(0), via="print"),), ("tpu_interpret",),
                      x64=True, devices=2)
    assert [(f.path, f.known) for f in oracles.check(on_mesh).failures] == [
        ("tpu_interpret", entry)]
    assert not oracles.check(dataclasses.replace(on_mesh, devices=None)).failures
    # ...and a local copy of 64-bit data there (valid-runs-any-d19a6da8; it
    # ran at stop 24, fails on 0.12.1: either way it is this entry's)
    i64 = ir.Ref("int64", (2,))
    local = ir.Case((i64, i64, ir.Ref("dma", ())), (
        DmaStart(ir.View(0), ir.View(1), ir.View(2)), DmaWait(ir.View(0), ir.View(1), ir.View(2))),
        ("tpu_interpret",), x64=True, devices=2)
    assert all(f.known == entry for f in oracles.check(local).failures)
    # ...and a plain load or store of an int64 ref there (valid-runs-any-d19a6da8
    # again, from a pltpu.store, at stop 64); an int16 ref alone runs there
    i16 = ir.Ref("int16", ())
    for stmt in (Get(ir.View(1)), ref.MaskedStore(ir.View(1), Scalar(11))):
        case = ir.Case((i16, ir.Ref("int64", ())), (stmt, Get(ir.View(0))),
                       ("tpu_interpret",), x64=True, devices=2)
        failures = oracles.check(case).failures
        assert failures and all(f.known == entry for f in failures), failures
    alone = ir.Case((i16,), (Get(ir.View(0)),), ("tpu_interpret",), x64=True, devices=2)
    assert not oracles.check(alone).failures

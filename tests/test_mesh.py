"""Programs on a mesh of simulated CPU devices: remote copies, remote
signals and the barrier semaphore under shard_map, the model's lockstep
(fuzz/model.py, `_over_devices`) with its order between devices, and
planted bugs in where each discharge path sends a copy."""
import dataclasses
import math
import subprocess
import sys

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from fuzz import compat, ir, model, oracles, paths, serialize
from fuzz.suppressions import known_findings, seen_on
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.dma.order import mutated
from fuzz.ops.dma.patterns import communication
from fuzz.ops.semaphore import Signal, Wait
from fuzz.oracles import model_vs_path
from hunting import hunt, premise
from strategies.programs import programs

A, SEND, RECV = ir.Ref("int32", (2,)), ir.Ref("dma", ()), ir.Ref("dma", ())
# Before 0.12 JAX discharges no remote copy with a device id in mesh form (known
# finding mesh-device-id-not-dischargeable-on-0.10), so nothing is compared there.
DISCHARGES_REMOTE = pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason=(
    f"JAX {jax.__version__} cannot discharge a remote copy to a mesh device id"))
BARRIER = ir.Ref("barrier", (), memory_space=ir.COLLECTIVE)
# Where the tests that must run on the TPU interpreter keep a copy's operands:
# 0.7.0 to 0.9.2 cannot copy one in no memory space (a known finding,
# tpu-interpret-copy-of-an-operand-in-no-memory-space).
VMEM = "vmem"


def _shift(offset=1, *, barrier=True, devices=4, waits=("wait",), space=None):
    """A ring shift of r0 into r1 by ``offset`` devices (r2, r3 its
    semaphores), after a barrier with its sender (r4) or not; r0 and r1 in
    memory space ``space``."""
    to = ir.MeshIndex(offset)
    copy = (ir.View(0), ir.View(1), ir.View(3), ir.View(2))
    body = (DmaStart(*copy, device_id=to), *(DmaWait(*copy, m, device_id=to) for m in waits))
    if barrier:
        body = (Signal(ir.View(4), ir.Int(1), device_id=ir.MeshIndex(-offset)),
                Wait(ir.View(4), ir.Int(1)), *body)
    data = dataclasses.replace(A, memory_space=space)
    return ir.Case((data, data, SEND, RECV, BARRIER), body, devices=devices)


def _blocks(case, i):
    """Ref ``i``'s block on each device as the kernel starts."""
    ref = case.refs[i]
    return model.pattern(ir.Ref(ref.kind, (case.devices, *ref.shape)), i)


def test_a_ring_shift_after_a_barrier_lands_its_senders_block():
    case = _shift(1)
    m = model.evaluate(case)
    assert m.verdict == "defined", m.undefined
    assert np.array_equal(np.asarray(m.state[1]), np.roll(_blocks(case, 0), 1, axis=0))
    assert np.array_equal(np.asarray(m.state[0]), _blocks(case, 0))   # the source is as it was


def test_without_the_barrier_it_races_with_the_receivers_kernel_start_only():
    m = model.evaluate(_shift(1, barrier=False))
    assert m.verdict == "racy" and m.lockstep, m.undefined
    assert "only the kernel's start" in m.undefined
    # a copy to the device itself needs no barrier
    assert model.evaluate(_shift(0, barrier=False)).verdict == "defined"


def test_a_barrier_with_the_wrong_device_orders_nothing():
    case = _shift(1)
    wrong = ir.replace_nodes(case.body[:1], ir.MeshIndex, lambda m: ir.MeshIndex(2))
    m = model.evaluate(dataclasses.replace(case, body=(*wrong, *case.body[1:])))
    assert m.verdict == "racy" and m.lockstep, m.undefined


def test_a_touch_of_the_destination_before_the_copy_races_unless_the_barrier_follows_it():
    from fuzz.ops.ref import Swap
    from fuzz.ops.ref.common import Iota
    case = _shift(1)
    store = Swap(ir.View(1), Iota("int32", (2,)))
    before = dataclasses.replace(case, body=(store, *case.body))
    assert model.evaluate(before).verdict == "defined"   # the barrier orders it
    late = dataclasses.replace(case, body=(*case.body[:2], store, *case.body[2:]))
    m = model.evaluate(late)
    assert m.verdict == "racy" and not m.lockstep, m.undefined


def test_mutated_waits_deadlock_or_leave_the_copy_in_flight():
    case = _shift(1, waits=("wait_read", "wait_write"))
    assert model.evaluate(dataclasses.replace(
        case, body=mutated(case.body, "wait_twice", 4))).verdict == "deadlock"
    assert model.evaluate(dataclasses.replace(
        case, body=mutated(case.body, "drop_wait", 4))).verdict == "unwaited"


def test_an_all_gather_gives_every_device_every_block():
    @settings(max_examples=8, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(communication((A,), 4, ("all_gather",)))
    def check(drawn):
        new, body = drawn
        case = ir.Case((A, *new), body, devices=4)
        m = model.evaluate(case)
        gathered = next(i for i, r in enumerate(case.refs) if r.shape == (4, 2))
        if m.verdict == "defined":
            for d in range(4):
                assert np.array_equal(np.asarray(m.state[gathered])[d], _blocks(case, 0))
        else:
            assert m.verdict in ("racy", "deadlock", "unwaited"), m.undefined
    check()


def test_a_mesh_case_round_trips_through_json_and_checks_its_devices():
    case = _shift(1)
    assert serialize.loads(serialize.dumps(case)) == case
    with pytest.raises(ir.IRError, match="mesh"):
        dataclasses.replace(case, devices=None)
    with pytest.raises(ir.IRError, match="1 to 8"):
        dataclasses.replace(case, devices=9)
    with pytest.raises(ir.IRError, match="top level"):
        ir.Case(case.refs, (_loop(case.body[2:]),), devices=4)


def _loop(body):
    from fuzz.ops.control import Loop
    return Loop(ir.Int(1), tuple(body))


@DISCHARGES_REMOTE
@pytest.mark.parametrize("devices", [1, 2, 4, 8])
def test_the_tpu_interpreter_and_the_hlo_interpreter_agree_with_the_model(devices):
    """Both with the barrier (the TPU interpreter) and without it (the HLO
    interpreter, which runs in lockstep and has no barrier semaphore)."""
    with_barrier = oracles.check(_shift(1, devices=devices), on_paths=("tpu_interpret",))
    without = oracles.check(_shift(1, barrier=False, devices=devices), on_paths=("pallas_call",))
    for report in (with_barrier, without):
        assert not report.failures, report.failures
        assert report.compared["model-vs-path"] == 1, report.skipped


@DISCHARGES_REMOTE
def test_the_hlo_interpreter_refuses_a_remote_signal_and_fails_on_the_barrier():
    report = oracles.check(_shift(1), on_paths=("pallas_call",))
    from fuzz.suppressions import known_findings
    assert [known_findings.match(f, report.failures).id for f in report.failures] == [
        "hlo-interpret-barrier-semaphore"], report.failures


def test_a_mesh_program_runs_standalone_in_a_fresh_interpreter():
    """The rendered program asks for the mesh's devices before JAX starts."""
    case = _shift(1, devices=4, space=VMEM)
    text, _ = paths.program(case, "tpu_interpret")
    second = [n for n, _ in paths.MODULES["tpu_interpret"].results(case)].index("r1")
    out = subprocess.run([sys.executable, "-c", text + f"\nprint(run()[{second}].tolist())"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == str(
        np.roll(_blocks(_shift(1, devices=4, space=VMEM), 0), 1, axis=0).tolist())


def test_programs_on_a_mesh_take_its_sizes():
    from hypothesis.errors import InvalidArgument
    with pytest.raises(InvalidArgument, match="mesh"):
        programs(mesh=(16,)).example()

    @settings(max_examples=10, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(mesh=(2,), paths=("pallas_call",)))
    def check(case):
        assert case.devices == 2 and any(
            getattr(s, "device_id", None) is not None or s.family == "dma"
            for s in case.statements), case
    check()


# --- planted: a copy sent to the wrong device -----------------------------------

def _meshed(*names):
    """Patterns of copies alone, on a mesh of 2 or 4, over an int32 ref."""
    return programs(ops=(DmaStart, DmaWait, Signal, Wait), max_semaphores=0,
                    data_dtypes=("int32",), paths=names, mesh=(2, 4), scoped=False, x64=False,
                    transforms=("at",), max_statements=0, max_data_refs=1,
                    memory_spaces=(None,))


def _one_further(logical, n):
    return None if logical is None else (logical + 1) % n


@DISCHARGES_REMOTE
def test_model_catches_the_hlo_interpreter_copying_to_the_wrong_device(plant):
    from jax._src.pallas import primitives
    real = primitives.device_id_to_logical

    def wrong(mesh_context, *args, **kwargs):
        logical, rest = real(mesh_context, *args, **kwargs)
        return _one_further(logical, math.prod(mesh_context.mesh_shape)), rest
    plant(primitives, "device_id_to_logical", wrong)
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), _meshed("pallas_call"),
             statements=2, refs=4)
    assert f.path == "pallas_call" and f.case.devices == 2, f
    assert {type(s) for s in f.case.body} == {DmaStart, DmaWait}, f.case


@pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason=(
    f"JAX {jax.__version__}'s TPU interpreter finds a device id elsewhere than "
    "interpret/utils.py"))
def test_model_catches_the_tpu_interpreter_copying_to_the_wrong_device(plant):
    from jax._src.pallas.mosaic.interpret import utils
    real = utils._device_id_to_logical

    def wrong(device_id, device_id_type, axis_sizes, *args, **kwargs):
        logical, core = real(device_id, device_id_type, axis_sizes, *args, **kwargs)
        sizes = axis_sizes.values() if hasattr(axis_sizes, "values") else axis_sizes
        return _one_further(logical, math.prod(sizes)), core
    plant(utils, "_device_id_to_logical", wrong)
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), _meshed("tpu_interpret"),
             statements=5, refs=5)
    assert f.path == "tpu_interpret" and f.case.devices == 2, f
    assert DmaStart in {type(s) for s in f.case.body}, f.case


@DISCHARGES_REMOTE
def test_the_abstract_path_traces_and_discharges_one_devices_kernel():
    for case in (_shift(1), _shift(1, barrier=False)):
        report = oracles.check(case, on_paths=("abstract",))
        assert not report.failures and report.outcomes[0].error is None, report.failures
        assert "partial-discharge" in report.not_applied


def _raced(case, tries=5):
    """The eager interpreter's report of a racy ``case`` in which the copy
    came after its receiver allocated the buffer: one that comes before
    fails in JAX's interpreter (KeyError: ('vmem', id, device, core)), now
    and then, on a loaded machine."""
    for _ in range(tries):
        report = oracles.check(case, on_paths=("tpu_interpret_eager",))
        if not any("KeyError: ('vmem'" in f.message for f in report.failures):
            return report
    pytest.skip(f"the copy came before its receiver's buffer {tries} times")


@premise(compat.probe("jax._src.pallas.mosaic.interpret.race_detection_state"),
         "the race detector has no module of its own to plant into")
# (in VMEM instead, 0.8.3's interpreter hangs on this racy copy)
@premise(not seen_on.applies("known", "tpu-interpret-copy-of-an-operand-in-no-memory-space"),
         "the interpreter cannot copy an operand in no memory space")
def test_race_detection_on_a_mesh_sees_a_copy_racing_with_its_receivers_start(plant):
    """Planted: the detector's check of writes a no-op. Without a barrier
    the copy races with what the receiver's kernel start wrote."""
    case = _shift(1, barrier=False)
    report = _raced(case)
    assert not report.failures and report.outcomes[0].races, report.failures
    from jax._src.pallas.mosaic.interpret import race_detection_state
    plant(race_detection_state.RaceDetectionState, "check_write", lambda *a, **k: None)
    report = _raced(case)
    assert [f.oracle for f in report.failures] == ["race-detection"], report.failures
    assert "misses a race" in report.failures[0].message


@premise(seen_on.applies("known", "tpu-interpret-remote-copy-of-64-bit-data"),
         "its remote copy of 64-bit data does not fail as filed")
def test_a_failed_interpreter_kernel_leaves_no_error_for_the_next_case():
    """The known remote copy of 64-bit data fails with its other device's
    callbacks in flight; up to 0.11 JAX kept that error in its runtime tokens
    and raised it again in the next kernel that called back."""
    known = known_findings.BY_ID["tpu-interpret-remote-copy-of-64-bit-data"]
    failed = oracles.check(known.example, on_paths=("tpu_interpret",))
    assert [f.known for f in failed.failures] == [known.id], failed.failures
    report = oracles.check(_shift(1, space=VMEM), on_paths=("tpu_interpret", "tpu_interpret_eager"))
    assert not report.failures and len(report.outcomes) == 2, report.failures

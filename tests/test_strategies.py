"""The strategies reach everything they promise (found, not hoped for),
keep valid views scalar, and validate their arguments."""
import pytest
from hypothesis import Phase, find, given, settings, strategies as st
from hypothesis.errors import InvalidArgument

from fuzz import ir, ops
from fuzz.triage import minimize
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz import paths
from fuzz.ops.control.wrap import Wrap
from fuzz.ops.dma import DmaStart
from strategies.programs import (MISTAKES, copy_programs, invalid_programs, plain_programs,
                                 programs, ref_programs, swarm_programs)
from strategies.semaphores import semaphore_shapes, semaphores
from strategies.transforms import transform_chains

# More than the ci profile's 150: a bound on the search, not its cost; `find`
# stops at the first hit, and the rarest kinds take hundreds of draws.
FIND = settings(max_examples=2000, database=None, deadline=None)


def _find(strategy, condition, *, shrink=False):
    """An example of ``strategy`` that meets ``condition``; shrunk only where
    the test is about shrinking (an occurrence needs none, and shrinking
    costs most of the time)."""
    phases = None if shrink else (Phase.explicit, Phase.generate)
    return find(strategy, condition, settings=settings(FIND, **({"phases": phases} if phases else {})))


def _indices(case):
    return [i for v in ir.walk(case.body, ir.View) for t in v.transforms if isinstance(t, ir.At)
            for i in t.indices]


@pytest.mark.parametrize("kind", ir.SEMAPHORE_KINDS)
def test_every_semaphore_kind_occurs(kind):
    _find(programs(), lambda c: any(s.kind == kind for s in c.refs) and c.body)


@pytest.mark.parametrize("shape_test", [
    lambda s: s == (), lambda s: len(s) == 1, lambda s: len(s) == 2, lambda s: len(s) == 3,
    lambda s: 0 in s])
def test_scalar_array_and_zero_size_shapes_occur(shape_test):
    _find(programs(), lambda c: any(shape_test(s.shape) for s in c.refs))


def test_zero_size_sides_are_about_one_in_eight():
    """Zero-size refs stay an edge case: a zero-size operand stops every
    Pallas path at a known crash (one_of of a repeated strategy once drew 0
    for one side in four)."""
    sides = []

    @settings(max_examples=400, database=None, phases=[Phase.generate])
    @given(semaphore_shapes(min_dims=4, max_dims=4, max_side=4))
    def draw(shape):
        sides.extend(shape)
    draw()
    assert 0.05 < sides.count(0) / len(sides) < 0.25, sides.count(0) / len(sides)


@pytest.mark.parametrize("wanted", [
    lambda c: any(isinstance(t, ir.Reshape) for v in ir.walk(c.body, ir.View) for t in v.transforms),
    lambda c: any(isinstance(t, ir.Transpose) for v in ir.walk(c.body, ir.View) for t in v.transforms),
    lambda c: any(sum(isinstance(t, ir.At) for t in v.transforms) >= 2
                  for v in ir.walk(c.body, ir.View)),
    lambda c: any(isinstance(i, ir.Int) and i.value < 0 and not i.dynamic for i in _indices(c)),
    lambda c: any(isinstance(i, ir.Int) and i.dynamic for i in _indices(c)),
    lambda c: any(isinstance(i, ir.Ds) and i.start.dynamic for i in _indices(c)),
    lambda c: any(isinstance(i, ir.Ds) and not i.start.dynamic for i in _indices(c)),
    lambda c: any(isinstance(i, ir.Slice) and (i.step or 1) > 1 for i in _indices(c)),
    lambda c: any(isinstance(i, ir.IntArray) for i in _indices(c)),
    lambda c: any(isinstance(i, ir.Ellipsis_) for i in _indices(c)),
    lambda c: any(isinstance(t, ir.Bitcast) for v in ir.walk(c.body, ir.View) for t in v.transforms),
], ids=["reshape", "transpose", "chained_at", "negative_int", "dynamic_int", "dynamic_ds",
        "static_ds", "strided_slice", "int_array", "ellipsis", "bitcast"])
def test_every_transform_kind_occurs(wanted):
    _find(programs(), wanted)


def test_bitcast_occurs_in_invalid_programs():
    _find(invalid_programs(), lambda c: any(isinstance(t, ir.Bitcast)
                                            for v in ir.walk(c.body, ir.View) for t in v.transforms))


@pytest.mark.parametrize("wanted", [
    lambda s: isinstance(s, Signal) and isinstance(s.inc, ir.Int) and not s.inc.dynamic,
    lambda s: isinstance(s, Signal) and isinstance(s.inc, ir.Int) and s.inc.dynamic,
    lambda s: isinstance(s, Signal) and isinstance(s.inc, ir.Int) and s.inc.value > 2**15,
    lambda s: isinstance(s, Signal) and isinstance(s.inc, ir.Result),
    lambda s: isinstance(s, Wait) and s.value.dynamic,
    lambda s: isinstance(s, Wait) and not s.value.dynamic,
    lambda s: isinstance(s, Wait) and s.decrement,
    lambda s: isinstance(s, Wait) and not s.decrement,
    lambda s: isinstance(s, Read),
], ids=["signal_static", "signal_dynamic", "signal_large", "signal_by_value", "wait_dynamic", "wait_static",
        "wait_decrement", "wait_no_decrement", "read"])
def test_every_parameter_value_kind_occurs(wanted):
    _find(programs(), lambda c: any(wanted(s) for s in c.body))


@pytest.mark.parametrize("wanted", [
    lambda s: isinstance(s, Signal) and s.device_id is not None and s.device_id_type,
    lambda s: isinstance(s, Signal) and s.core_index is not None,
], ids=["device_id", "core_index"])
def test_unsupported_parameters_occur_in_invalid_programs(wanted):
    _find(invalid_programs(), lambda c: any(wanted(s) for s in c.body))


@pytest.mark.parametrize("mistake", MISTAKES)
def test_every_mistake_occurs(mistake):
    case = _find(invalid_programs(mistakes=(mistake,)), lambda c: True)
    assert case.expect is not None and case.expect.primitive in {op.primitive for op in ops.ops()}


@given(programs())
def test_valid_semaphore_statements_use_scalar_views(case):
    assert case.valid
    for s in case.statements:
        if s.family == "semaphore":
            assert ir.view_shape(case, s.view) == ()


@given(st.data(), semaphore_shapes(min_side=1))
def test_chains_reach_scalars_and_non_scalars(data, shape):
    chain = data.draw(transform_chains(shape))
    assert ir.view_shape((ir.Ref("int16", shape),), ir.View(0, chain)) == ()
    free = data.draw(transform_chains(shape, scalar=False))
    ir.view_shape((ir.Ref("int16", shape),), ir.View(0, free))


def test_shrinking_heads_for_small_programs():
    case = _find(programs(), lambda c: any(isinstance(s, Wait) for s in c.body), shrink=True)
    # One wait, or a signal and the wait that balances it.
    assert len(case.body) <= 2 and case.refs[0].shape == () and len(case.refs) == 1
    assert all(len(v.transforms) == 0 for v in ir.walk(case.body, ir.View))


@pytest.mark.parametrize("bad", [
    lambda: semaphore_shapes(min_dims=-1), lambda: semaphore_shapes(min_dims=3, max_dims=1),
    lambda: semaphores(kinds=("fp8",)), lambda: semaphores(shapes=(4,)),
    lambda: transform_chains((0,)), lambda: transform_chains((2,), kinds=("rotate",)),
    lambda: transform_chains((2,), max_length=-1), lambda: programs(max_statements="3"),
    lambda: programs(paths=("gpu",)), lambda: invalid_programs(mistakes=("typo",)),
])
def test_bad_arguments_fail_early(bad):
    with pytest.raises(InvalidArgument):
        find(bad(), lambda _: True)


def test_debug_inspection_of_a_ref_occurs():
    from fuzz.ops.ref import Inspect
    _find(programs(max_semaphores=0), lambda c: any(
        isinstance(s, Inspect) and s.via == "print" for s in c.statements))


@settings(max_examples=20, deadline=None)
@given(swarm_programs())
def test_swarm_programs_are_valid_programs(case):
    assert case.valid and not minimize.mistakes(case)


@settings(max_examples=30, deadline=None)
@given(ref_programs())
def test_ref_programs_run_on_jax_new_ref(case):
    """No semaphore, copy, scoped ref, grid or mesh: the jax.new_ref paths
    take every one (what the whole-program oracles need)."""
    assert case.valid and not minimize.mistakes(case)
    assert not any(r.kind in ir.SEMAPHORE_TYPES or r.scoped for r in case.refs)
    assert case.grid is None and case.devices is None
    assert paths.MODULES["jax_refs"].not_applicable(case) is None, case



@settings(max_examples=30, deadline=None)
@given(plain_programs())
def test_plain_programs_are_plain_jax(case):
    """No Pallas API and only indexed views: the eager path takes every one
    but a shard_map or pl.run_scoped wrapper's (which it refuses as JAX does)."""
    assert case.valid and not minimize.mistakes(case)
    assert not any(s.pallas_api for s in ir.flat(case.body))
    assert all(isinstance(t, ir.At) for v in ir.walk(case.body, ir.View) for t in v.transforms)
    wrapped = any(getattr(s, "via", None) in ("shard_map", "run_scoped") for s in ir.flat(case.body))
    assert wrapped or paths.not_applicable(case, "eager") is None, case


@settings(max_examples=30, deadline=None)
@given(copy_programs())
def test_copy_programs_copy_as_tpu_kernels_do(case):
    """Each has a DMA semaphore; it counts on real semaphores only (no
    int16 stand-in), signals and waits only on a mesh pattern's barrier,
    indexes its views and nothing else, and runs on 2 devices or one, on
    the TPU interpreter's paths and the discharge alone."""
    assert case.valid and not minimize.mistakes(case)
    assert any(r.kind == "dma" for r in case.refs)
    assert all(case.refs[v.ref].kind in ir.SEMAPHORE_TYPES
               for s in ir.flat(case.body) for v in s.counted())
    assert all(case.refs[s.view.ref].kind == "barrier"
               for s in ir.flat(case.body) if isinstance(s, (Signal, Wait, Read)))
    assert all(isinstance(t, ir.At) for v in ir.walk(case.body, ir.View) for t in v.transforms)
    assert case.devices in (None, 2)
    assert set(case.paths) == {"abstract", "tpu_interpret", "tpu_interpret_eager"}


def _tpu_interpreter_copies(case, copy) -> bool:
    """Whether the TPU interpreter takes ``case`` and it has a ``copy``."""
    return paths.not_applicable(case, "tpu_interpret") is None and any(
        isinstance(s, DmaStart) and copy(case, s) for s in ir.flat(case.body))


@pytest.mark.parametrize("copy", [
    # a remote copy of 64-bit data
    lambda case, s: s.device_id is not None and ir.dtype_bits(ir.view_dtype(case, s.src)) == 64,
    # a copy out of a gathered view (x.at[idx], idx an integer array)
    lambda case, s: any(isinstance(i, ir.IntArray) for t in s.src.transforms for i in t.indices),
    lambda case, s: s.add,
], ids=["remote-64-bit", "gather", "add"])
def test_copy_programs_reach_copies_on_the_tpu_interpreter(copy):
    """What they are for: copies the TPU interpreter runs, of kinds that
    `programs` gives it about once in 200 draws or (a remote copy of 64-bit
    data) none in 1,500 (docs/measurements.md, "Copy programs")."""
    _find(copy_programs(), lambda c: _tpu_interpreter_copies(c, copy))


def test_every_pallas_call_is_pallas_api():
    """An op whose call is Pallas's (pl., pltpu.), or a semaphore or a copy,
    says so: plain programs must not draw it."""
    for op in ops.ops():
        pallas = (op.public_call or "").startswith("pl") or op.family in ("semaphore", "dma")
        assert op.pallas_api == pallas, op.__name__


def test_plain_programs_reach_a_store_in_checkpoint_on_the_eager_path():
    """What they are for: a conjunction ref programs reach about once in
    1,500 draws (docs/measurements.md, stop 49)."""
    _find(plain_programs(), lambda c: paths.not_applicable(c, "eager") is None and any(
        isinstance(s, Wrap) and s.via == "checkpoint" and any(
            t.primitive in ("swap", "addupdate") for t in ir.flat(s.body))
        for s in ir.flat(c.body)))


def test_programs_call_a_function_on_views_at_a_traced_row():
    _find(programs(), lambda c: any(
        isinstance(s, Wrap) and s.xs and s.at.dynamic for s in ir.flat(c.body)))

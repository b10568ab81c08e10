"""pallas_call grids (`fuzz.ir.Grid`): BlockSpecs with index maps, the
block axis squeezed, PrefetchScalarGridSpec; the model's meaning over a
grid, every path that takes one against it, and a planted bug in how the
interpreter writes blocks back."""
import dataclasses

import numpy as np
from hypothesis import given, strategies as st

from fuzz import ir, model, oracles, paths, serialize
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.common import Fill
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.oracles import model_vs_path
from fuzz.triage import minimize
from strategies.programs import grids, programs
from hunting import as_on_newest, hunt, lacked_here

AT = lambda ref, *i: ir.View(ref, (ir.At(tuple(ir.Int(j) for j in i)),))  # noqa: E731


@given(grids())
def test_every_grid_point_has_a_block_of_its_own(grid):
    assert sorted(grid.blocks()) == list(range(grid.size))


def test_blocks_follow_the_order_the_axes_are_taken_in():
    assert ir.Grid((2, 3), (0, 1)).blocks() == (0, 1, 2, 3, 4, 5)
    assert ir.Grid((2, 3), (1, 0)).blocks() == (0, 2, 4, 1, 3, 5)
    assert ir.Grid((3,), (0,), reverse=True).blocks() == (2, 1, 0)


def _case(*body, refs=(ir.Ref("regular", (2,)), ir.Ref("int32", (3,))), grid):
    return ir.Case(refs, body, ("abstract", "pallas_call", "tpu_interpret"), grid=grid)


def test_over_a_grid_counts_carry_over_and_each_block_is_its_own():
    case = _case(Signal(AT(0, 1), ir.Int(2)), Read(AT(0, 1)), Wait(AT(0, 1), ir.Int(2)),
                 AddUpdate(AT(1, 0), Fill(ir.Int(10))), grid=ir.Grid((3,), (0,), reverse=True))
    meaning = model.evaluate(case)
    assert meaning.reads == (2, 2, 2)
    initial = (np.arange(9).reshape(3, 3) + 1) % 7 + 1   # ref 1's pattern starts 1 on
    assert meaning.state[1] == (initial + [[10, 0, 0]]).tolist()
    # ... and a count left at each point adds up
    assert model.evaluate(_case(Signal(AT(0, 0), ir.Int(1)), Read(AT(0, 0)),
                                grid=ir.Grid((2, 2), (1, 0)))).reads == (1, 2, 3, 4)


def test_a_scoped_ref_starts_afresh_at_every_grid_point():
    refs = (ir.Ref("int32", (2,), scoped=True),)
    case = _case(AddUpdate(AT(0, 0), Fill(ir.Int(5))), refs=refs, grid=ir.Grid((2,), (0,)))
    assert model.evaluate(case).state[0] == [[6, 2], [6, 2]]


def _grid_cases():
    body = (Signal(AT(0, 1), ir.Int(3, True)), Wait(AT(0, 1), ir.Int(3, True)),
            Swap(ir.View(1, (ir.At((ir.Int(2, True),)),)), Fill(ir.Int(7, True))),
            Swap(AT(1, 0), Fill(ir.Int(4)), returns=True))
    for grid in (ir.Grid((2,), (0,)), ir.Grid((2, 3), (1, 0)), ir.Grid((2, 1, 2), (2, 0, 1), True),
                 ir.Grid((3, 2), (1, 0), prefetch=True), ir.Grid((2, 2), (0, 1), True, True)):
        yield _case(*body, grid=grid)
        # The TPU interpreter reads no semaphore on CPU.
        yield dataclasses.replace(_case(*body[:1], Read(AT(0, 1)), *body[1:], grid=grid),
                                  paths=("abstract", "pallas_call"))


def test_every_path_that_takes_a_grid_agrees_with_the_model():
    for case in _grid_cases():
        report = oracles.check(case)
        failures = as_on_newest(report.failures)
        assert not failures, (case.grid, [f.message for f in failures])
        here = set(case.paths) - lacked_here(report)
        assert {o.path for o in report.outcomes if o.error is None} == here
        assert report.compared.get("model-vs-path", 0) == len(here) - 1


def test_other_paths_say_a_grid_is_not_theirs():
    case = dataclasses.replace(next(_grid_cases()), paths=("run_state", "eager"))
    for path in case.paths:
        assert "a grid is pallas_call's" in paths.not_applicable(case, path)


def test_a_grid_round_trips_through_json_and_older_files_have_none():
    case = list(_grid_cases())[6]
    assert serialize.loads(serialize.dumps(case)) == case
    old = serialize.to_data(dataclasses.replace(case, grid=None))
    del old["grid"]
    assert serialize.from_data(dict(old, schema=3)).grid is None


def test_the_minimizer_drops_a_grid_that_is_not_needed():
    case = list(_grid_cases())[6]
    smaller = minimize.minimize(case, lambda c: any(isinstance(s, Signal) for s in c.statements)).case
    assert smaller.grid is None


# --- a planted bug in the interpreter's grid ------------------------------------

def _first_block_only(update_slice):
    """The HLO interpreter's block write-back with the block index dropped:
    every grid point's block is written over block 0."""
    def wrong(start_idx, block_shape, value, update, is_squeeze):
        start_idx = (0, *start_idx[1:]) if is_squeeze and is_squeeze[0] else start_idx
        return update_slice(start_idx, block_shape, value, update, is_squeeze)
    return wrong


def test_model_catches_block_write_back_ignoring_the_index_map(plant):
    from jax._src.pallas import hlo_interpreter
    plant(hlo_interpreter, "_dynamic_update_slice",
          _first_block_only(hlo_interpreter._dynamic_update_slice))
    strategy = st.builds(
        lambda case, grid: dataclasses.replace(case, grid=grid),
        programs(max_semaphores=0, data_dtypes=("int32",), max_statements=3, max_depth=0,
                 paths=("pallas_call",), x64=False, scoped=False, grid=False,
                 ops=(Get, Swap, AddUpdate), transforms=("at",)),
        grids())
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), strategy, statements=1)
    assert f.case.grid is not None and f.case.grid.size == 2, f.case.grid
    assert "final r" in f.message, f.message


def _first_axis_fastest(grid, indices):
    """The HLO interpreter's next grid point, counting the first axis
    fastest (column-major) instead of the last."""
    import jax.numpy as jnp
    following, carry = [], True
    for size, index in zip(grid, indices):
        i = jnp.where(carry, index + 1, index)
        carry = size == i
        following.append(jnp.where(carry, 0, i))
    return tuple(following)


def test_model_catches_the_grid_visited_in_the_wrong_order(plant):
    """Counts carry from one grid point to the next, and each point writes
    its reads to a row of its own: a wrong order shows in the reads."""
    from jax._src.pallas import hlo_interpreter
    plant(hlo_interpreter, "_get_next_indices", _first_axis_fastest)
    strategy = st.builds(
        lambda case, grid: dataclasses.replace(case, grid=grid),
        programs(kinds=("int16",), data_dtypes=(), max_statements=3, max_depth=0,
                 paths=("pallas_call",), grid=False, transforms=("at",), endings=("readout",)),
        grids(max_axes=2).filter(lambda g: len(g.shape) == 2))
    f = hunt(model_vs_path.ModelMismatch, ("model-vs-path",), strategy, statements=3)
    assert len(f.case.grid.shape) == 2 and min(f.case.grid.shape) == 2, f.case.grid
    assert "at grid point" in f.message, f.message

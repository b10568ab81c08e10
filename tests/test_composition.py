"""discharge-composes (fuzz/oracles/composition.py): discharging some refs,
then the rest, gives what discharging all at once gives."""
import ml_dtypes
import numpy as np

from fuzz import ir, oracles
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.common import Iota
from fuzz.oracles.composition import CompositionMismatch, _same
from hunting import hunt, needs, plant_addupdate_twice_while_a_ref_is_kept
from strategies.programs import programs

ORACLE = ("discharge-composes",)


def test_a_program_discharged_in_two_steps_agrees():
    refs = (ir.Ref("int32", (2,)), ir.Ref("float32", (3,)), ir.Ref("int32", (2,)))
    case = ir.Case(refs, (Swap(ir.View(1), Iota("float32", (3,), 1)),
                          Get(ir.View(0)), Swap(ir.View(2), ir.Result(1))), ("abstract",))
    report = oracles.check(case, oracles=ORACLE)
    assert report.compared == {"discharge-composes": 1} and not report.failures, report


def test_one_ref_has_no_second_step():
    case = ir.Case((ir.Ref("int32", (2,)),), (Get(ir.View(0)),), ("abstract",))
    report = oracles.check(case, oracles=ORACLE)
    assert "no second step" in report.not_applied["discharge-composes"]


# The plant is in addupdate's rule, which 0.6.2 draws none of.
@needs("jax.ref.addupdate")
def test_composes_catches_a_rule_that_goes_wrong_while_a_ref_is_kept(plant):
    """The first of the two steps keeps refs, and goes wrong."""
    plant_addupdate_twice_while_a_ref_is_kept(plant)
    strategy = programs(max_semaphores=0, data_dtypes=("int32",), max_statements=4,
                        paths=("abstract",), ops=(Get, Swap, AddUpdate), x64=False,
                        scoped=False, max_depth=0, memory_spaces=(None,), transforms=("at",))
    f = hunt(CompositionMismatch, ORACLE, strategy, statements=2)
    assert "in two steps" in f.message and "differs from discharging at once" in f.message
    assert any(isinstance(s, AddUpdate) for s in f.case.body)


def test_a_nan_equals_a_nan_in_every_float_dtype():
    """A bitcast view can make a NaN; both discharges then hold one."""
    nan = np.array([np.nan, 1], dtype=ml_dtypes.bfloat16)
    assert _same(nan, nan.copy()) and not _same(nan, np.array([np.nan, 2], ml_dtypes.bfloat16))
    assert not _same(np.array([1], np.int32), np.array([1], np.int16))

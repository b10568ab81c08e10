"""`Inspect` of several refs: its IR (JSON, checks, simpler variants), how it
is written and drawn, and the public face of the known findings it shows."""
import json

import pytest
from hypothesis import find, settings

from fuzz import emit, ir, serialize
from fuzz.ops.ref import Inspect
from fuzz.suppressions import known_findings
from fuzz.triage import minimize

REFS = (ir.Ref("float32", (2,)), ir.Ref("int32", (3,), scoped=True), ir.Ref("bool", ()))
TWO = Inspect(ir.View(0), others=(ir.View(1),))


def _case(*body, refs=REFS):
    return ir.Case(refs, body, paths=("pallas_call",))


def test_several_views_round_trip_and_an_old_single_view_case_still_loads():
    case = _case(Inspect(ir.View(2), "print", (ir.View(0), ir.View(1))))
    assert serialize.loads(serialize.dumps(case)) == case
    # As a case was written when an inspection took one view: no ``others``.
    old = serialize.to_data(_case(Inspect(ir.View(0))))
    del old["body"][0]["others"]
    assert serialize.from_data(json.loads(json.dumps(old))).body == (Inspect(ir.View(0)),)


def test_views_are_written_as_arguments_of_one_callback_or_print():
    source = emit.kernel_source(_case(TWO))
    assert "jax.debug.callback(lambda *x: None, r0, r1)" in source, source
    source = emit.kernel_source(_case(Inspect(ir.View(0), "print", (ir.View(2),))))
    assert 'jax.debug.print("r0 = {}, r2 = {}", r0, r2)' in source, source
    # One view is written as it always was.
    assert "jax.debug.callback(lambda x: None, r0)" in emit.kernel_source(_case(Inspect(ir.View(0))))


@pytest.mark.parametrize("stmt, error", [
    (Inspect(ir.View(0), others=(ir.View(0),)), "names a ref twice"),
    (Inspect(ir.View(0), others=(ir.View(3),)), "of a semaphore"),
    (Inspect(ir.View(0), others=(ir.View(1, (ir.At((ir.Int(0),)),)),)), "take a whole ref")])
def test_each_view_is_a_whole_data_ref_named_once(stmt, error):
    with pytest.raises(ir.IRError, match=error):
        _case(stmt, refs=(*REFS, ir.Ref("regular", ())))


def test_simpler_drops_one_view_at_a_time_and_the_minimizer_keeps_the_one_needed():
    three = Inspect(ir.View(0), "print", (ir.View(1), ir.View(2)))
    assert list(three.simpler(_case(three))) == [
        Inspect(ir.View(1), "print", (ir.View(2),)), Inspect(ir.View(0), "print", (ir.View(2),)),
        Inspect(ir.View(0), "print", (ir.View(1),)), Inspect(ir.View(0), "callback",
                                                             (ir.View(1), ir.View(2)))]
    assert three.complexity() > Inspect(ir.View(0), "print", (ir.View(1),)).complexity()
    small = minimize.minimize(_case(three), lambda c: any(
        isinstance(s, Inspect) and any(c.refs[v.ref].kind == "bool" for v in s.views)
        for s in c.statements)).case
    assert small.refs == (REFS[2],) and small.body == (Inspect(ir.View(0)),)


def test_draws_take_one_to_three_distinct_data_refs():
    refs = (*REFS, ir.Ref("regular", ()), ir.Ref("int16", (1,)))
    fast = settings(max_examples=500, database=None, deadline=None)
    for n in (1, 2, 3):
        stmt = find(Inspect.draws(refs), lambda s: len(s.views) == n, settings=fast)
        assert len({v.ref for v in stmt.views}) == n and 3 not in {v.ref for v in stmt.views}
    assert find(Inspect.draws(refs, among={1, 4}), lambda s: True, settings=fast).view.ref in (1, 4)


def test_an_operand_and_a_scoped_ref_in_one_callback_is_the_public_crash():
    """debug-discharge-writes-back-its-refs shows through pl.pallas_call."""
    k = known_findings.BY_ID["debug-discharge-writes-back-its-refs"]
    assert k.example.paths == ("pallas_call",) and not k.caveat
    assert "jax.debug.callback(lambda *x: None, r0, r1)" in emit.kernel_source(k.example)
    assert {r.scoped for r in k.example.refs} == {False, True}


@pytest.mark.parametrize("known_id, oracle", [
    ("debug-discharge-writes-back-its-refs", "valid-runs"),
    ("addupdate-after-scalar-store-numpy-dtype", "model-vs-path")])
def test_report_known_files_the_hit_a_maintainer_sees_through_public_api(tmp_path, known_id, oracle):
    """Not the first hit (an internal invariant's: effects, aval-preserved)
    but the public crash or wrong value beside it."""
    from fuzz import cli
    from fuzz.triage import reports
    if known_id not in {k.id for k in known_findings.KNOWN}:
        pytest.skip(f"{known_id} is not live on this JAX")
    assert cli.main(["report", "--known", known_id, "--no-verify", "--no-minimize",
                     "--corpus-dir", str(tmp_path / "c"), "--reports-dir", str(tmp_path / "r")]) == 0
    (record,) = reports.records(tmp_path / "r")
    assert (record["known"], record["oracle"]) == (known_id, oracle), record["oracle"]


def test_a_planted_wrong_value_beside_the_scalar_store_and_addupdate_is_reported(plant):
    """addupdate-after-scalar-store-numpy-dtype's public symptom (a wrong
    final value of the bool ref) swallows no wrong value of another ref."""
    from fuzz import compat, oracles
    from fuzz.ops.ref import Swap
    from fuzz.ops.ref.common import Iota
    from jax._src.state import primitives as state_primitives
    from hunting import rule_returning
    k = known_findings.BY_ID["addupdate-after-scalar-store-numpy-dtype"]
    if k not in known_findings.KNOWN:
        pytest.skip(f"{k.id} is not live on this JAX")
    planted = (7,)
    plant(compat.discharge_rules(), state_primitives.swap_p, rule_returning(
        state_primitives.swap_p, lambda v: v + 1 if tuple(getattr(v, "shape", ())) == planted else v))
    store = Swap(ir.View(1), Iota("int32", planted, 1))
    case = ir.Case((*k.example.refs, ir.Ref("int32", planted)), (*k.example.body, store),
                   paths=k.example.paths)
    report = oracles.check(case)
    assert any(f.known == k.id for f in report.failures), report.failures
    assert any(f.oracle == "model-vs-path" and f.statement == len(k.example.body)
               and f.known is None for f in report.failures), report.failures

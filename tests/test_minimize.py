"""IR reduction: smaller, same signature, and never a different program."""
import pytest
from hypothesis import given, settings, strategies as st

from fuzz import ir, model, oracles, ops
from fuzz.suppressions import seen_on
from fuzz.suppressions.known_findings import BY_ID
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.ref import Swap
from fuzz.ops.ref.common import Iota
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.triage import findings, minimize
from hunting import needs, premise


def _first_signature(case):
    return findings.signature(oracles.check(case).failures[0])


@premise(seen_on.applies("known", "check-sem-avals-last-transform-not-indexer"),
         "no check-sem-avals-last-transform-not-indexer here")
@needs("jax._src.state.types.TransformedRef.transpose")
def test_a_padded_real_bug_shrinks_to_its_one_line_trigger():
    # check-sem-avals-last-transform-not-indexer, buried in noise.
    padded = ir.Case(
        (ir.Ref("regular", (3, 2), scoped=True), ir.Ref("int16", (2,))),
        (Signal(ir.View(0, (ir.At((ir.Int(2, True),)), ir.At((ir.Int(1),)))), ir.Int(3, True)),
         Read(ir.View(1, (ir.At((ir.Int(1),)),))),
         Signal(ir.View(1, (ir.At((ir.Int(0, True),)), ir.Transpose(()))), ir.Int(5)),
         Wait(ir.View(1, (ir.At((ir.Int(0),)),)), ir.Int(0), decrement=False)))
    sig = _first_signature(padded)
    result = minimize.minimize(padded, findings.same_failure(sig))
    small = result.case
    assert _first_signature(small) == sig
    assert len(small.body) == 1 and len(small.refs) == 1 and len(small.paths) == 1
    assert small.refs[0].shape == () and not small.refs[0].scoped
    assert small.body[0].view.transforms == (ir.Transpose(()),)
    assert not small.dynamic_values


def test_an_invalid_case_never_shrinks_into_a_valid_one():
    # JAX fails on the index into a zero-size axis with an unrelated error,
    # and the valid signal next to it "fails" (runs without the error) once
    # the bad one is dropped: the reduction must keep the mistake.
    bad = BY_ID["index-into-zero-size-typeerror"].example
    case = ir.Case(
        (ir.Ref("int16", (2,)), *bad.refs),
        (Signal(ir.View(0, (ir.At((ir.Int(0),)),)), ir.Int(1)),
         Signal(ir.View(1, (ir.At((ir.Int(0),)),)), ir.Int(1))),
        expect=bad.expect)
    result = minimize.minimize(case, findings.same_failure(_first_signature(case)))
    assert minimize.mistakes(result.case) == {"out_of_bounds"}
    assert len(result.case.body) == 1


def test_mistakes_match_what_invalid_programs_plant():
    sem = (ir.Ref("int16", (2,)),)
    assert minimize.mistakes(ir.Case(sem, (Read(ir.View(0)),))) == {"non_scalar_view"}
    assert minimize.mistakes(ir.Case(sem, (Signal(ir.View(0, (ir.Bitcast("int8"), ir.At((ir.Int(0),)))),
                                                     ir.Int(1)),))) >= {"bitcast"}
    assert minimize.mistakes(ir.Case((ir.Ref("float32", ()),), (Wait(ir.View(0)),))) == {"wrong_dtype"}
    assert minimize.mistakes(ir.Case(sem, (Signal(ir.View(0, (ir.At((ir.Int(1),)),)),
                                                     ir.Int(2**40)),))) == {"overflow"}


def test_attempts_are_bounded():
    case = BY_ID["check-sem-avals-last-transform-not-indexer"].example
    result = minimize.minimize(case, lambda c: False, max_attempts=3)
    assert result.attempts <= 3 and result.case == case


@pytest.mark.parametrize("name", sorted(ops.mistakes()))
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_each_planted_mistake_is_named_by_its_statement(name, data):
    """Strategies and the minimizer share one vocabulary: the statement a
    mistake plants reports that very mistake."""
    refs = (ir.Ref("int16", (2,)),)
    new, stmt, _ = data.draw(ops.mistakes()[name].draw(refs))
    new = new if isinstance(new, tuple) else (new,)
    assert name in stmt.mistakes(ir.Case((*refs, *new), (stmt,)))


def test_a_grid_shrinks_to_the_fewest_points_that_still_fail():
    # A bug in how blocks are written back needs a second grid point: the
    # reduction goes from 5 to 2, not only to 1, which would lose it.
    case = ir.Case((ir.Ref("int32", (1,)),), (Swap(ir.View(0), Iota("int32", (1,))),),
                   ("pallas_call",), grid=ir.Grid((5,), (0,)))
    result = minimize.minimize(case, lambda c: c.grid is not None and c.grid.size > 1)
    assert result.case.grid.shape == (2,)


def test_a_ref_loses_an_axis_with_the_index_every_view_has_there():
    # The seed-invariant plant on 0.10.2 shrank to a (1, 1, 1) semaphore
    # indexed r0.at[0, 0, 0]: neither dropping the axis alone nor the index
    # alone is a well-formed case, both at once are.
    at = ir.View(0, (ir.At((ir.Int(0), ir.Int(0), ir.Int(0))),))
    case = ir.Case((ir.Ref("int16", (1, 1, 1)),), (Signal(at, ir.Int(1)), Read(at)), ("abstract",))
    result = minimize.minimize(case, lambda c: any(isinstance(s, Signal) for s in c.body)
                               and any(isinstance(s, Read) for s in c.body))
    assert len(result.case.refs[0].shape) <= 1, result.case


def test_a_candidate_the_model_cannot_evaluate_is_not_taken():
    """A simplification may draw what no strategy draws (a ref made int16,
    which the minimizer prefers, under a bitcast to int32): the model has no
    elements for it and raises ModelError, which killed `report --known`.
    Such a candidate does not fail; the search goes on."""
    case = ir.Case((ir.Ref("float32", (2, 2)),),
                   (Swap(ir.View(0, (ir.Bitcast("int32"),)), Iota("int32", (2, 2))),))
    seen = []

    def still_fails(c):
        seen.append(c.refs[0].kind)
        if c.refs[0].kind == "int16":
            model.evaluate(ir.Case((ir.Ref("int16", (2, 2)),), (
                Swap(ir.View(0, (ir.Bitcast("int32"),)), Iota("int32", (2, 1))),)))
        return True
    result = minimize.minimize(case, still_fails)
    assert "int16" in seen and result.case.refs[0].kind != "int16"


def test_a_defined_program_never_shrinks_into_one_jax_leaves_undefined():
    """Dropping a copy's wait leaves the copy in flight at kernel exit, which
    JAX documents as an error on hardware: a reproducer of that would accuse
    JAX of the wrong thing. Here a case "fails" while it waits on the REGULAR
    semaphore and starts a copy (as the race-detector finding needs a copy
    to run on its path at all): the copy's wait stays."""
    data = ir.Ref("float32", (2,))
    copy = (ir.View(2), ir.View(3), ir.View(1))
    case = ir.Case((ir.Ref("regular", ()), ir.Ref("dma", ()), data, data),
                   (DmaStart(*copy), DmaWait(*copy), Wait(ir.View(0), ir.Int(0))))
    assert minimize.verdict(case) == "defined"
    result = minimize.minimize(case, lambda c: {Wait, DmaStart} <= {type(s) for s in c.statements})
    assert minimize.verdict(result.case) == "defined", result.case
    assert len(result.case.body) == 3, result.case
    assert minimize.verdict(ir.Case(case.refs, case.body[:1] + case.body[2:])) == "unwaited"

"""A case a path refuses runs there as that path can (`fuzz.paths.projected`,
``check_property(project=True)``): the eager path without the semaphores,
``pltpu.load``s and reshaped views it cannot run, so a bug only the eager
path shows is met in the programs most draws make; the TPU interpreter with
the int16 refs that stand in for semaphores typed as those semaphores."""
import dataclasses

from fuzz import compat, ir, oracles, paths
from fuzz.campaign.property import Stats, check_property
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.ref import Get, Swap
from fuzz.ops.semaphore import Signal, Wait
from fuzz.oracles import grad_matches, model_vs_path
from fuzz.paths import tpu_interpret
from fuzz.triage import findings, minimize
from hunting import (needs_eager_at, plant_copies_adding_one,
                     plant_get_jvp_doubling_its_tangent_eagerly, premise)

F32, SEM = ir.Ref("float32", (2,)), ir.Ref("regular", ())
AT = [ir.View(1, (ir.At((ir.Int(k),)),)) for k in range(2)]
# A semaphore signalled and waited on (ref 0), a float ref read and written
# (ref 1), and a reshaped view of it: the eager path runs none of it as is.
CASE = ir.Case((SEM, F32), (
    Signal(ir.View(0), ir.Int(1)), Get(AT[0]), Wait(ir.View(0), ir.Int(1)),
    Swap(AT[1], ir.Result(1)), Get(ir.View(1, (ir.Reshape((2, 1)),)))))


def test_the_eager_path_runs_a_refused_case_without_what_it_cannot_run():
    assert paths.not_applicable(CASE, "eager")
    kept = paths.projected(CASE, "eager")
    assert kept == dataclasses.replace(CASE, refs=(F32,), body=(
        Get(ir.View(0, AT[0].transforms)), Swap(ir.View(0, AT[1].transforms), ir.Result(0))))
    assert paths.not_applicable(kept, "eager") is None
    # Nothing to do where the path runs it, on a path that does not project,
    # for an invalid case, or where nothing is left.
    assert paths.projected(kept, "eager") is None
    assert paths.projected(CASE, "jax_refs") is None
    assert paths.projected(dataclasses.replace(CASE, expect=ir.ExpectedError("ValueError", "")),
                           "eager") is None
    assert paths.projected(dataclasses.replace(CASE, body=CASE.body[:1]), "eager") is None


def test_a_statement_that_uses_a_dropped_value_keeps_the_case_whole():
    """A kept statement that stores what a refused one read: no projection
    (dropping it would change what is left)."""
    case = dataclasses.replace(CASE, body=(
        Get(ir.View(1, (ir.Reshape((2, 1)), ir.At((ir.Int(0),))))), Swap(AT[0], ir.Result(0))))
    assert paths.projected(case, "eager") is None


def _caught_only_projected(case, path, oracle, failure_type):
    """``case``'s failure under ``oracle``: none without projection (``path``
    refuses the case), one with it, raised by its projection's one rerun;
    and that failure minimized as a campaign minimizes it."""
    stats = Stats()
    check_property(case, stats, project=False, only_oracles=(oracle,))
    assert stats.projected == 0 and path in stats.skipped
    try:
        check_property(case, stats, project=True, only_oracles=(oracle,))
    except failure_type as f:
        caught = f
    else:
        raise AssertionError(f"the planted bug was not caught on {path}")
    assert stats.projected == 1 and caught.known is None, caught
    assert caught.case == paths.projected(case, path)
    sig = findings.signature(caught)
    small = minimize.minimize(caught.case, lambda c: any(
        findings.signature(g) == sig for g in oracles.check(c, oracles=(oracle,)).failures))
    return caught, small


@needs_eager_at
def test_a_bug_only_the_eager_path_shows_is_caught_in_a_refused_case(plant):
    """get's JVP planted wrong on concrete refs only: the case as drawn never
    reaches it (the eager path refuses semaphores and reshaped views, the
    other paths run under jit); its projection does, and the failure shrinks
    to the float statements alone."""
    plant_get_jvp_doubling_its_tangent_eagerly(plant)
    caught, small = _caught_only_projected(CASE, "eager", "grad-matches", grad_matches.GradMismatch)
    assert caught.path == "eager" and caught.message.startswith("eagerly, fwd derivatives")
    # (a get and a swap of a float ref: what the plant needs, and no semaphore)
    assert [s.primitive for s in small.case.statements] == ["get", "swap"], small.case
    assert small.case.refs == (ir.Ref("float32", ()),) and small.case.paths == ("eager",)


# --- the TPU interpreter: int16 refs standing in for semaphores -------------

I16, I32 = ir.Ref("int16", ()), ir.Ref("int32", (2,))
COPY = dict(src=ir.View(2), dst=ir.View(3), sem=ir.View(1))
# A stand-in signalled and waited on (ref 0), one a copy counts on (ref 1),
# between two int32 refs: the TPU interpreter takes neither stand-in.
STOOD_IN = ir.Case((I16, I16, I32, I32), (
    Signal(ir.View(0), ir.Int(1)), DmaStart(**COPY), DmaWait(**COPY),
    Wait(ir.View(0), ir.Int(1))))


def test_the_tpu_interpreter_runs_stand_ins_as_the_semaphores_they_stand_for():
    assert paths.not_applicable(STOOD_IN, "tpu_interpret")
    kept = paths.projected(STOOD_IN, "tpu_interpret")
    assert kept == dataclasses.replace(STOOD_IN, refs=(
        ir.Ref("regular", ()), ir.Ref("dma", ()), I32, I32))
    assert paths.not_applicable(kept, "tpu_interpret") is None
    assert paths.projected(STOOD_IN, "tpu_interpret_eager") == kept
    # The same with a grid: the interpreter runs it (the eager path, once).
    grid = ir.Grid((2,), (0,))
    assert paths.projected(dataclasses.replace(STOOD_IN, grid=grid), "tpu_interpret") == \
        dataclasses.replace(kept, grid=grid)


def test_a_stand_in_of_two_uses_is_dropped_with_its_statements():
    """A stand-in both signalled and counted by a copy has no one type: its
    statements go (the copy's too, and the refs it moved), and the rest
    runs. One also read as data stays what it is."""
    both = dataclasses.replace(STOOD_IN, body=(
        Signal(ir.View(1), ir.Int(1)), Wait(ir.View(1), ir.Int(1)), *STOOD_IN.body))
    assert tpu_interpret.restated(both).refs[:2] == (ir.Ref("regular", ()), I16)
    assert paths.projected(both, "tpu_interpret") == ir.Case((ir.Ref("regular", ()),), (
        Signal(ir.View(0), ir.Int(1)), Wait(ir.View(0), ir.Int(1))), STOOD_IN.paths)
    read = dataclasses.replace(STOOD_IN, body=(Get(ir.View(0)), *STOOD_IN.body))
    assert tpu_interpret.restated(read).refs[:2] == (I16, ir.Ref("dma", ()))


@premise(compat.probe("jax._src.pallas.mosaic.interpret.interpret_pallas_call"),
         "the TPU interpreter's copies live elsewhere")
def test_a_copy_bug_of_the_tpu_interpreter_is_caught_in_a_case_with_stand_ins(plant):
    """A copy planted wrong in the TPU interpreter: the case as drawn never
    reaches it (its semaphores are int16 stand-ins); as restated it does, and
    the failure shrinks to the copy on its DMA semaphore."""
    plant_copies_adding_one(plant)
    caught, small = _caught_only_projected(STOOD_IN, "tpu_interpret", "model-vs-path",
                                           model_vs_path.ModelMismatch)
    # (its one rerun ran on both of the interpreter's option sets; either fails)
    assert caught.path.startswith("tpu_interpret"), caught
    assert [s.primitive for s in small.case.statements] == ["dma_start", "dma_wait"], small.case
    assert any(r.kind == "dma" for r in small.case.refs), small.case


def test_each_paths_semaphore_fact_is_one_the_package_documents():
    """(jax_refs' reason for refusing semaphores once took the name of the
    fact, SEMAPHORES, and so its value.)"""
    assert {p: paths.fact(p, "SEMAPHORES") for p in paths.NAMES if paths.fact(
        p, "SEMAPHORES") not in ("stand-in", "real", "either", False)} == {}

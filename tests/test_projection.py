"""A case a path refuses runs there as that path can (`fuzz.paths.projected`,
``check_property(project=True)``): the eager path without the semaphores,
``pltpu.load``s and reshaped views it cannot run, so a bug only the eager
path shows is met in the programs most draws make."""
import dataclasses

from fuzz import ir, oracles, paths
from fuzz.campaign.property import Stats, check_property
from fuzz.ops.ref import Get, Swap
from fuzz.ops.semaphore import Signal, Wait
from fuzz.oracles import grad_matches
from fuzz.triage import findings, minimize
from hunting import needs_eager_at, plant_get_jvp_doubling_its_tangent_eagerly

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


@needs_eager_at
def test_a_bug_only_the_eager_path_shows_is_caught_in_a_refused_case(plant):
    """get's JVP planted wrong on concrete refs only: the case as drawn never
    reaches it (the eager path refuses semaphores and reshaped views, the
    other paths run under jit); its projection does, and the failure shrinks
    to the float statements alone."""
    plant_get_jvp_doubling_its_tangent_eagerly(plant)
    stats = Stats()
    check_property(CASE, stats, project=False, only_oracles=("grad-matches",))
    assert stats.projected == 0 and "eager" in stats.skipped
    try:
        check_property(CASE, stats, project=True, only_oracles=("grad-matches",))
    except grad_matches.GradMismatch as f:
        caught = f
    else:
        raise AssertionError("the planted eager JVP bug was not caught")
    assert stats.projected == 1 and caught.path == "eager" and caught.known is None
    assert caught.case == paths.projected(CASE, "eager")
    assert caught.message.startswith("eagerly, fwd derivatives")
    sig = findings.signature(caught)
    small = minimize.minimize(caught.case, lambda c: any(
        findings.signature(g) == sig for g in oracles.check(c, oracles=("grad-matches",)).failures))
    # (a get and a swap of a float ref: what the plant needs, and no semaphore)
    assert [s.primitive for s in small.case.statements] == ["get", "swap"], small.case
    assert small.case.refs == (ir.Ref("float32", ()),) and small.case.paths == ("eager",)

"""Cost-aware scheduling (fuzz/campaign/schedule.py): the costly paths and
oracles run where a case brings them something new, and at their floor
rate otherwise; the cheap ones always; each cost read from its own module."""
import pytest

from fuzz import ir, oracles, paths
from fuzz.campaign import property, schedule
from fuzz.ops.ref import Swap
from fuzz.ops.ref.common import Iota, Scalar
from fuzz.ops.semaphore import Signal

STORE = ir.Case((ir.Ref("int32", (2,)),), (Swap(ir.View(0), Scalar(1)),))
SIGNAL = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(1)),))
COSTLY_PATHS = [p for p in paths.NAMES if paths.COST[p] >= schedule.COSTLY]
CHEAP = [p for p in paths.NAMES if paths.COST[p] < schedule.COSTLY] + [
    c.oracle for c in oracles.ORACLES if c.COST < schedule.COSTLY]


def test_a_costly_unit_runs_where_a_case_brings_it_a_new_feature():
    s = schedule.Scheduler(seed=0)
    first = s.plan(STORE)
    assert first.skipped == () and set(COSTLY_PATHS) <= set(first.paths)
    s.ran(STORE, first)
    # A signal is new to every costly unit: all run again.
    assert s.plan(SIGNAL).skipped == ()


def test_without_anything_new_each_costly_unit_runs_at_its_floor_rate_and_cheap_ones_always():
    s = schedule.Scheduler(seed=0)
    s.ran(STORE, s.plan(STORE))
    runs = {}
    for _ in range(2000):
        plan = s.plan(STORE)
        assert set(CHEAP) <= set(plan.paths) | set(plan.oracles)
        for unit in (*plan.paths, *plan.oracles):
            runs[unit] = runs.get(unit, 0) + 1
    for unit, cost in s.cost.items():
        if cost >= schedule.COSTLY:
            assert runs[unit] / 2000 == pytest.approx(schedule.FLOOR / cost, abs=0.04), unit


def test_a_cost_is_read_from_the_module_that_states_it(monkeypatch):
    """Making an oracle cheap (its own COST) stops it being scheduled."""
    vmap = oracles.class_of("vmap-stack")
    s = schedule.Scheduler(seed=0)
    s.ran(STORE, s.plan(STORE))
    assert any("vmap-stack" in s.plan(STORE).skipped for _ in range(50))
    monkeypatch.setattr(vmap, "COST", 0)
    cheap = schedule.Scheduler(seed=0)
    cheap.ran(STORE, cheap.plan(STORE))
    assert not any("vmap-stack" in cheap.plan(STORE).skipped for _ in range(50))


def test_a_replayed_regression_runs_everything_though_its_features_are_covered():
    """A campaign replays filed regressions through the schedule: a costly
    unit skipped there (the one that found the bug) read as the bug fixed."""
    s = schedule.Scheduler(seed=0)
    s.ran(STORE, s.plan(STORE))
    assert any(s.plan(STORE).skipped for _ in range(50))
    assert all(s.plan(STORE, everything=True).skipped == () for _ in range(50))


def test_the_all_schedule_runs_everything_and_an_unknown_one_is_refused():
    s = schedule.Scheduler(seed=0, mode="all")
    s.ran(STORE, s.plan(STORE))
    assert s.plan(STORE).skipped == ()
    with pytest.raises(ValueError, match="unknown schedule"):
        schedule.Scheduler(mode="fast")


def test_features_name_statements_wrappers_refs_and_structure():
    assert schedule.features(STORE) == {"ref:int32", "statement:swap"}
    assert "ref:int16" in schedule.features(SIGNAL)


def test_a_unit_that_did_nothing_on_a_case_has_not_covered_its_features():
    """grad-matches planned on a program with no float ref did not apply:
    a float program with the same statements brings it something still."""
    s = schedule.Scheduler(seed=0)
    s.ran(STORE, s.plan(STORE), worked={"vmap-stack"})
    later = [s.plan(STORE) for _ in range(50)]
    assert any("vmap-stack" in p.skipped for p in later)
    assert not any("grad-matches" in p.skipped for p in later)


def test_the_pairs_schedule_runs_a_costly_unit_on_a_pair_of_features_it_has_not_seen():
    """Each of a signal and a store seen alone: their pair is new only to
    the pairs schedule."""
    both = ir.Case((ir.Ref("int32", (2,)), ir.Ref("int16", ())),
                   (Swap(ir.View(0), Scalar(1)), Signal(ir.View(1), ir.Int(1))))
    for mode, new in (("cost", False), ("pairs", True)):
        s = schedule.Scheduler(seed=0, mode=mode)
        for case in (STORE, SIGNAL):
            s.ran(case, s.plan(case))
        assert all(not p.skipped for p in [s.plan(both) for _ in range(50)]) == new, mode


def test_a_plan_that_skips_the_only_named_oracle_compares_nothing():
    """With ``--oracles vmap-stack``, a case the schedule gives no
    vmap-stack has no oracle to compare: an empty plan is not 'all' (it
    was, and ran every costly oracle on such cases unreported)."""
    s = schedule.Scheduler(seed=0, only_oracles=("vmap-stack",))
    s.ran(STORE, s.plan(STORE))
    plan = next(p for p in (s.plan(STORE) for _ in range(50)) if not p.oracles)
    stats = property.Stats()
    valid = ir.Case(STORE.refs, (Swap(ir.View(0), Iota("int32", (2,), 1)),), ("eager",))
    property.check_property(valid, stats, on_paths=plan.paths, only_oracles=plan.oracles)
    assert stats.cases["eager"] == 1 and not any(stats.compared.values()), stats.compared


def test_a_trigger_is_counted_drawn_and_reached_only_where_its_oracle_compared():
    # pltpu.load of an int ref beside a float one: grad-matches on run_state
    # shows run-state-jvp-of-load-without-tangent (a known finding, counted).
    from fuzz.ops.ref import Get, MaskedLoad
    case = ir.Case((ir.Ref("float32", ()), ir.Ref("int32", (2,))),
                   (Get(ir.View(0)), MaskedLoad(ir.View(1))))
    bug, other = "run-state-jvp-of-load-without-tangent", "dma-wait-src-sem-view-operand-count"
    counts = {}
    for name, only in (("all", None), ("without", [o for o in oracles.ORACLE_NAMES
                                                   if o != "grad-matches"])):
        stats = property.Stats()
        property.check_property(case, stats, only_oracles=only)
        property.count_triggers(case, stats, [bug, other])
        counts[name] = stats.triggers
    assert counts == {"all": {bug: [1, 1]}, "without": {bug: [1, 0]}}


def test_counting_triggers_survives_a_view_an_invalid_case_cannot_shape():
    # An invalid program's view bitcasts a (2,) int16 ref to int8, which has
    # no shape; ref-index-of-a-zero-size-dimension's trigger reads the shape
    # of each indexed view. Counting it raised IRError in the worker, and three
    # such cases ended the benchmark's campaigns after 2-5 minutes of 10.
    from fuzz.ops.ref import Get
    case = ir.Case((ir.Ref("int16", (2,)), ir.Ref("int16", (3, 0))),
                   (Get(ir.View(0, (ir.Bitcast("int8"), ir.At((ir.Int(0),))))),
                    Get(ir.View(1, (ir.At((ir.Int(2),)),)))),
                   expect=ir.ExpectedError("ValueError", "bitcast", "get"))
    stats = property.Stats()
    stats.cases["abstract"] = 1
    bug = "ref-index-of-a-zero-size-dimension"
    property.count_triggers(case, stats, [bug])
    assert stats.triggers == {bug: [1, 1]}   # (the second statement's: 0 in (3, 0)[2:])


def test_the_count_left_at_exit_is_counted_compared_and_its_trigger_reached():
    # left-over-counts compares the count a copy never waited on leaves, and
    # counted no case: the readout saw 1,927 cases with this bug's trigger, 0
    # reached, in campaigns that exposed it in 4 of 5.
    from fuzz.suppressions import known_findings
    bug = "tpu-interpret-on-wait-drops-unwaited-copy"
    case = known_findings.BY_ID[bug].example
    stats = property.Stats()
    property.check_property(case, stats)
    property.count_triggers(case, stats, [bug])
    assert stats.hits.get(bug) == "known" and stats.compared.get("left-over-counts") == 1
    assert stats.triggers == {bug: [1, 1]}

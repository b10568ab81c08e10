"""The rediscovery benchmark's catalogue (fuzz/rediscovery.py): well formed,
and its predicates tell its bugs apart on the running JAX. No campaign runs
here: the benchmark itself is `python -m fuzz.bench_campaign rediscover`,
and its timing is never asserted."""
import dataclasses
import re

import pytest

from fuzz import compat, ir, oracles, rediscovery
from fuzz.bench_campaign import _stopped, _triggers, by_root
from fuzz.ops.ref.common import Iota
from fuzz.rediscovery import BY_ID, CATALOGUE, FIXED, LIVE, Bug
from fuzz.suppressions import known_findings, seen_on
from fuzz.triage import bisect, releases

# Two live bugs of different families with cheap examples, and a fixed bug
# whose example runs cleanly from 0.9.1 on.
LIVE_A, LIVE_B = "bitcast-semaphore-unclear-error", "addupdate-bool-ref-gather"
FIXED_GOOD = "reshape-of-ref-to-scalar-refused"


def test_the_catalogue_has_twenty_fixed_bugs_and_the_live_ones():
    assert len(FIXED) >= 20
    assert LIVE
    assert len(BY_ID) == len(CATALOGUE)
    for b in CATALOGUE:
        assert b.kind in ("fixed", "live")
        assert known_findings.BY_ID[b.id] is b.entry
        assert b.family in ("semaphore", "ref", "dma", "control")
        assert b.bad_on == tuple(releases.ordered(b.bad_on))


def test_each_fixed_bug_is_bad_on_a_release_and_not_on_a_later_one():
    for b in FIXED:
        seen = seen_on.TABLE["known"][b.id]
        assert seen[b.last_bad] == "bad"
        assert compat.parse_release(b.fixed_in) > compat.parse_release(b.last_bad)
        assert seen[b.fixed_in] == b.fixed_verdict
        assert b.fixed_verdict.split(":")[0] in ("good", "other"), b.id   # it ran there
        later = [r for r in seen if compat.parse_release(r) > compat.parse_release(b.last_bad)]
        assert later and all(seen[r] != "bad" for r in later), b.id
    for b in LIVE:
        assert seen_on.TABLE["known"][b.id][rediscovery.NEWEST] == "bad"
        assert b.fixed_in is None and b.commit is None


def test_fixing_commits_are_full_hashes_of_fixed_bugs():
    for fid, commit in rediscovery.COMMITS.items():
        assert BY_ID[fid].kind == "fixed"
        assert re.fullmatch(r"[0-9a-f]{40}", commit)
        assert BY_ID[fid].commit == commit


def test_the_default_releases_cover_every_fixed_bug_and_none_can_go():
    chosen = rediscovery.cover()
    assert all(set(chosen) & set(b.bad_on) for b in FIXED)
    for r in chosen:
        rest = set(chosen) - {r}
        assert not all(rest & set(b.bad_on) for b in FIXED), r


def test_cover_is_the_smallest_set():
    def bug(name, *bad):
        return Bug(name, "fixed", "ref", bad, "9.9.9", "good", None, None)
    # Greedy would take 0.7.0 (three bugs) and then need two more.
    bugs = [bug("a", "0.6.2", "0.7.0"), bug("b", "0.7.0", "0.8.0"), bug("c", "0.7.0", "0.9.0"),
            bug("d", "0.6.2"), bug("e", "0.8.0"), bug("f", "0.9.0")]
    assert rediscovery.cover(bugs) == ["0.6.2", "0.8.0", "0.9.0"]


def _failures(bug_id):
    entry = BY_ID[bug_id].entry
    with rediscovery.considering(entry):
        return oracles.check(entry.example).failures


@pytest.mark.skipif(not all(seen_on.applies("known", i) for i in (LIVE_A, LIVE_B)),
                    reason="the two live bugs are not both bad on this JAX")
def test_a_live_bugs_predicate_matches_its_trigger_and_not_anothers():
    a, b = BY_ID[LIVE_A], BY_ID[LIVE_B]
    fa, fb = _failures(LIVE_A), _failures(LIVE_B)
    assert any(a.predicate(f, fa) for f in fa)
    assert any(b.predicate(f, fb) for f in fb)
    assert not any(a.predicate(f, fb) for f in fb)
    assert not any(b.predicate(f, fa) for f in fa)


@pytest.mark.skipif(seen_on.verdict("known", FIXED_GOOD) != "good",
                    reason=f"{FIXED_GOOD} is not fixed on this JAX")
def test_a_fixed_bugs_predicate_does_not_match_its_trigger_where_it_is_fixed():
    fixed = BY_ID[FIXED_GOOD]
    assert fixed.kind == "fixed"
    assert not any(fixed.predicate(f, _failures(FIXED_GOOD)) for f in _failures(FIXED_GOOD))
    fa = _failures(LIVE_A)
    assert not any(fixed.predicate(f, fa) for f in fa)


def test_considering_puts_back_the_running_releases_known_findings():
    before = known_findings.KNOWN
    entry = BY_ID[FIXED_GOOD].entry
    with rediscovery.considering(entry):
        assert entry in known_findings.KNOWN
    assert known_findings.KNOWN is before


def test_one_bisection_narrows_both_a_finding_and_a_fixed_bug():
    """`bisect.narrowed`, which `discharge-fuzz bisect --jax-repo` and
    `rediscovery.find_commits` share: the first commit that behaves as the
    newer end does, skipping those that cannot be judged, up to a limit."""
    first_new = 13
    judged = []

    def as_before(i, unjudged=frozenset({6, 7, 12})):
        judged.append(i)
        return None if i in unjudged else i < first_new
    lo, hi, tested, skipped = bisect.narrowed(0, 20, as_before)
    assert (lo, hi) == (11, 13) and skipped == {12} and tested == len(judged)
    # 12 cannot be judged: the change is in 11..13, and both ends say so
    lo, hi, _, skipped = bisect.narrowed(0, 20, lambda i: None if i in range(3, 18) else i < 10,
                                         max_skipped=4)
    assert hi - lo > 1 and len(skipped) == 4
    assert bisect.narrowed(0, 20, lambda i: i < 1)[:2] == (0, 1)


def test_each_bug_is_a_face_of_a_root_cause_of_its_own_kind():
    """`Bug.root` follows ``same_as`` to an entry that is its own root, in
    the catalogue and of the same kind (a fix mends all its faces)."""
    face = BY_ID["wrapped-bool-addupdate-partial-discharge"]
    assert face.root == "wrapper-in-run-scoped-mixing-scoped-and-outer-refs"
    for b in CATALOGUE:
        root = BY_ID[b.root]
        assert root.root == root.id and root.kind == b.kind, b.id
    assert len({b.root for b in LIVE}) < len(LIVE)


def test_a_trial_exposes_a_root_cause_at_the_first_of_its_faces():
    face, root = "wrapped-bool-addupdate-partial-discharge", "wrapper-in-run-scoped-mixing-scoped-and-outer-refs"
    other = LIVE_A
    trials = {face: [(("r", 0), 30.0), (("r", 1), None), (("r", 2), None)],
              root: [(("r", 0), 90.0), (("r", 1), 5.0), (("r", 2), None)],
              other: [(("r", 0), None)]}
    assert by_root(trials) == {root: [(("r", 0), 30.0), (("r", 1), 5.0), (("r", 2), None)],
                               other: [(("r", 0), None)]}


@pytest.mark.skipif(not all(seen_on.applies("known", i) for i in (
    LIVE_A, LIVE_B, "checkpoint-vjp-drops-ref-writes")), reason="not all three live on this JAX")
def test_blocked_says_what_stopped_a_triggered_case():
    """`fuzz.bench_campaign blocked`'s verdicts, on real runs of a bug's
    trigger: exposed; its only path skipped; its oracle not applying;
    another bug's crash stopping it."""
    bug = BY_ID["checkpoint-vjp-drops-ref-writes"]
    example = bug.entry.example
    store = example.body[0].body[0]
    scoped = dataclasses.replace(example, refs=(dataclasses.replace(example.refs[0], scoped=True),))
    integer = dataclasses.replace(example, refs=(ir.Ref("int32", ()),), body=(dataclasses.replace(
        example.body[0], body=(dataclasses.replace(store, value=Iota("int32", (), 3)),)),))
    assert _stopped(bug, [oracles.check(example)]) == "exposed"
    assert _stopped(bug, [oracles.check(scoped)]) == \
        "skipped: pl.run_scoped exists only inside Pallas kernels"
    assert _stopped(bug, [oracles.check(integer)]) == \
        "oracle not applied: no float32 or float64 ref in use"
    a = BY_ID[LIVE_A]
    assert _stopped(a, [oracles.check(BY_ID[LIVE_B].entry.example)]) == f"failed: {LIVE_B}"


def test_rediscover_prints_the_triggers_of_each_bug_missed_in_some_trial(capsys):
    missed, always = BY_ID[LIVE_A], BY_ID[LIVE_B]
    runs = [{"triggers": {LIVE_A: [3, 1], LIVE_B: [2, 2]}}, {"triggers": {}}]
    _triggers([missed, always], {LIVE_A: [None, 12.0], LIVE_B: [1.0, 2.0]}, runs)
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[3:]]
    assert rows == [[LIVE_A, "3", "1", "1/2"]]

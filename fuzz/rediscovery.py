"""The rediscovery benchmark's catalogue, in the manner of Magma and FuzzBench:
JAX bugs the fuzzer's program space reaches, each with the releases it lives
in and a predicate that says whether a finding is that bug.

Every bug is a known finding (`fuzz/ops/<family>/known.py`): its example is
the trigger program, its predicate is `known_findings.match` naming it (the
statement with its trigger, a message pattern specific to it), and
``seen_on.json`` holds what the example did on every release since 0.6.2,
measured by ``discharge-fuzz bisect --suppressions``. A bug is

- *fixed*: bad on some release and not on the newest (``fixed_in``: the
  first measured release after its last bad one; what its example did there
  is ``fixed_verdict``, ``good`` or failing otherwise, e.g. claimed first by
  another entry);
- *live*: bad on the newest release.

A campaign exposes a bug when a failure's known finding (set by the tiers
with `known_findings.match`, which on the releases the bug lives on is its
`Bug.predicate`) is the bug's entry: summary.json's ``exposure``, its
first hit.

``commit`` is the JAX commit that fixed it where `find_commits` narrowed the
change between ``fixed_in`` and the release before it (``--find-commits``;
the JAX mirror ends during 0.11.1, so fixes in 0.11.2 and later are None).

    python -m fuzz.rediscovery                  the catalogue, one line per bug
    python -m fuzz.rediscovery --check [IDS]    re-measure each fixed bug's trigger on
                                                its last bad and its fixed release
    python -m fuzz.rediscovery --find-commits [IDS] [--jax-repo PATH]
                                                bisect the fixing commits again
    python -m fuzz.bench_campaign rediscover BUDGET SEEDS   the benchmark itself
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import json
import sys
import tempfile
from dataclasses import dataclass

from fuzz.ops import KnownFinding
from fuzz.suppressions import known_findings, seen_on
from fuzz.triage import bisect, releases

NEWEST = releases.KNOWN[-1]
MAX_SKIPPED = 8   # commits a bisection may skip before it gives up
JAX_REPO = "/work/.mirror/jax-ml+jax/repo"

# What `find_commits` answered (python -m fuzz.rediscovery --find-commits,
# JAX mirror at cec06d116c, 0.11.1.dev): the first commit on the newer
# release's first-parent line whose example is no longer bad, each step
# judging it as seen_on.json does, with JAX's sources at that commit over
# the older (else the newer) release's jaxlib (a merge base that runs on
# neither is taken as bad, as its older release is). Not here: the fixes in
# 0.11.2, 0.12.0 and 0.12.1 (past the mirror); race-detector-misses-a-remote-copy-race
# (the commits between fail otherwise, the fuzzer asking an API those
# sources lack) and signal-and-wait-declare-no-effects (the commits between
# run on neither jaxlib): given up after MAX_SKIPPED skips; and
# masked-ops-negative-static-index, whose example stops being bad at
# 92faff137ef9 ("Add a new stage_p primitive ...") by failing as
# masked-ops-static-int-index first: that commit hides it, it does not fix it.
COMMITS: dict[str, str] = {
    # "Add memory_space to state.AbstractRef and use it instead of AbstractMemoryRef in Pallas"
    "run-scoped-drops-plain-ref-updates": "7cf7c967426dcde68f8819c26da35693d00863bc",
    "scan-over-memory-ref-has-no-mapping-handler": "7cf7c967426dcde68f8819c26da35693d00863bc",
    # "Merge pull request #30785 from mattjj:scan-discharge-refs-into-carry"
    "scan-over-zero-length-refs-reverse-mode": "551818948ee7a00746b7fc8c4e9c4d0451866635",
    # "Fix get vmap"
    "vmap-while-batched-count-cond-not-scalar": "ce6f33d55bf86a271692a8c5bcebdd66b47d187d",
    # "[Pallas] Make VMEM explicit on pallas_call TPU kernel inputs during tracing."
    "tpu-interpret-copy-of-an-operand-in-no-memory-space": "01c0f46f1579ef98f5e039540ffd96ce041c64ec",
    # "Simplify the flattening of TransformedRefs in DMAs."
    "dma-semaphore-view-last-transform-not-indexer": "b6fb583e3e0a863eaf4384c183ec7f3fa9aac47b",
    # "Merge pull request #37843 from mattjj:fix-debug-info-crash"
    "run-state-jvp-of-a-while-loop-over-a-float-ref": "221b3053539482b51dd2271ee8c2899e6cb17426",
    # "[Pallas] Clean up state Transforms"
    "semaphore-reshape-asks-for-a-numpy-dtype": "f6101063f460d8e5734d1cdf9d1dea2ce0f14e93",
    "reshape-of-ref-to-scalar-refused": "f6101063f460d8e5734d1cdf9d1dea2ce0f14e93",
    # "[Pallas] DCE all jaxprs before lowering" (it adds 'Cannot broadcast mask shape')
    "masked-load-mask-unchecked": "8fdc565dafaa92352de3d604ab2f3c3710125e73",
    # "[Take 2] In explicit mode, error out by default if the specs of arguments
    # do not match in_specs passed to shard_map. ..."
    "shard-map-of-a-ref-fails-reshard-assertion": "991fb76bc1eb49f3fbc4acc864b3ce93dd6ac53c",
}


@dataclass(frozen=True)
class Bug:
    id: str
    kind: str                  # "fixed" | "live"
    family: str                # the ops family of its statements
    bad_on: tuple[str, ...]    # releases its example fails on, as the entry says
    fixed_in: str | None       # first measured release after the last bad one
    fixed_verdict: str | None  # what the example did there
    commit: str | None         # the fixing JAX commit, where found
    entry: KnownFinding

    @property
    def root(self) -> str:
        """The root cause it is a face of (`known_findings.root_id`)."""
        return known_findings.root_id(self.entry)

    @property
    def last_bad(self) -> str:
        return self.bad_on[-1]

    def predicate(self, failure, report_failures=()) -> bool:
        """Whether ``failure`` is this bug: the first known finding it is an
        instance of, with this one considered beside the running release's."""
        with considering(self.entry):
            return known_findings.match(failure, report_failures) is self.entry


@contextlib.contextmanager
def considering(entry: KnownFinding):
    """The running release's known findings, and ``entry`` even where its
    example is not bad (in ``ALL_KNOWN``'s order, as the suppressions are)."""
    saved = known_findings.KNOWN
    known_findings.KNOWN = tuple(k for k in known_findings.ALL_KNOWN
                                 if k in saved or k is entry)
    try:
        yield
    finally:
        known_findings.KNOWN = saved


def _bug(entry: KnownFinding, seen: dict[str, str]) -> Bug | None:
    order = releases.ordered(seen)
    bad = tuple(r for r in order if seen[r] == "bad")
    if not bad:
        return None
    if seen.get(NEWEST) == "bad":
        return Bug(entry.id, "live", known_findings.FAMILY[entry.id], bad, None, None, None, entry)
    after = order[order.index(bad[-1]) + 1]
    return Bug(entry.id, "fixed", known_findings.FAMILY[entry.id], bad, after, seen[after],
               COMMITS.get(entry.id), entry)


CATALOGUE: tuple[Bug, ...] = tuple(
    b for k in known_findings.ALL_KNOWN
    if (b := _bug(k, seen_on.TABLE["known"].get(k.id, {}))) is not None)
BY_ID = {b.id: b for b in CATALOGUE}
FIXED = tuple(b for b in CATALOGUE if b.kind == "fixed")
LIVE = tuple(b for b in CATALOGUE if b.kind == "live")


def living_on(release: str, bugs=CATALOGUE) -> list[Bug]:
    return [b for b in bugs if release in b.bad_on]


def cover(bugs=FIXED) -> list[str]:
    """The fewest releases on which every one of ``bugs`` is bad (of those
    sets, the one with the most bugs on it counted per release, then the
    oldest)."""
    candidates = releases.ordered({r for b in bugs for r in b.bad_on})
    for n in range(1, len(candidates) + 1):
        fits = [c for c in itertools.combinations(candidates, n)
                if all(set(c) & set(b.bad_on) for b in bugs)]
        if fits:
            return list(max(fits, key=lambda c: sum(len(living_on(r, bugs)) for r in c)))
    return []


# --- measuring again, in each release's environment ---------------------------

def _judged(release: str, ids: list[str], env, sources: str | None = None) -> dict[str, str]:
    """The verdicts of the examples of ``ids`` on ``release`` (its JAX, or
    JAX's ``sources`` over its jaxlib), judged as seen_on.json's are: with
    the entries bad on ``release`` and ``ids`` suppressing."""
    suppressing = sorted({k for k, seen in seen_on.TABLE["known"].items()
                          if seen.get(release) == "bad"} | set(ids))
    unsupported = sorted(i for i, seen in seen_on.TABLE["unsupported"].items()
                         if seen.get(release, "bad") == "bad")
    request = {"suppressions": ids, "suppressing": suppressing + unsupported}
    if sources:
        request["jax_sources"] = sources
    answer = bisect.run_step(env, request, bisect.SUPPRESSION_S * len(ids) + bisect.STEP_TIMEOUT_S)
    if "seen_on" not in answer:
        return {i: f"n/a: {answer.get('detail', 'no answer')}" for i in ids}
    return answer["seen_on"]["known"]


def check(bugs=FIXED, jobs: int = 2, say=print) -> list[dict]:
    """Each fixed bug's trigger run again on its last bad release and on
    ``fixed_in``: ``{"id", "bad": {release: verdict}, "fixed": {...},
    "confirmed"}`` (bad, then not bad) and ``as_recorded`` (the fixed
    release's verdict of the same kind as seen_on.json's)."""
    wanted = {}
    for b in bugs:
        wanted.setdefault(b.last_bad, []).append(b.id)
        wanted.setdefault(b.fixed_in, []).append(b.id)
    envs, broken = bisect.environments(releases.ordered(wanted), None, "auto", say)
    found = {r: {i: f"n/a: {broken[r]}" for i in ids} for r, ids in wanted.items() if r in broken}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(_judged, r, ids, envs[r]): r for r, ids in wanted.items() if r in envs}
        for future in concurrent.futures.as_completed(futures):
            found[futures[future]] = future.result()
            say(f"done {futures[future]}")
    rows = []
    for b in bugs:
        bad, fixed = found[b.last_bad][b.id], found[b.fixed_in][b.id]
        rows.append({"id": b.id, "bad": {b.last_bad: bad}, "fixed": {b.fixed_in: fixed},
                     "confirmed": bad == "bad" and fixed != "bad",
                     "as_recorded": fixed.split(":")[0] == b.fixed_verdict.split(":")[0]})
    return rows


def find_commits(bugs, jax_repo: str = JAX_REPO, say=print) -> dict[str, dict]:
    """For each fixed bug whose releases have tags in ``jax_repo``, the first
    commit between its last bad release and ``fixed_in`` whose example is
    not bad, bisected along the newer tag's first-parent line (as
    ``discharge-fuzz bisect --jax-repo`` narrows a finding). The bugs of one
    pair of releases are judged together, one interpreter per commit; a
    commit neither release's jaxlib can run, or whose verdict is neither
    end's (a fuzzer's API that the sources lack), is skipped."""
    pairs = {}
    for b in bugs:
        pairs.setdefault((b.last_bad, b.fixed_in), []).append(b.id)
    envs, _ = bisect.environments(releases.ordered({r for p in pairs for r in p}), None, "auto", say)
    results = {}
    with tempfile.TemporaryDirectory(prefix="discharge-fuzz-rediscovery-") as tmp:
        for (older, newer), ids in pairs.items():
            try:
                commits = bisect.commit_range(jax_repo, older, newer)
            except bisect.BisectError as e:
                results.update({i: {"error": str(e)} for i in ids})
                continue
            seen: dict[int, dict[str, str] | None] = {}

            def verdicts(n):
                if n not in seen:
                    src = bisect.sources(jax_repo, commits[n], tmp)
                    seen[n] = None
                    for release in (older, newer):
                        got = _judged(older, ids, envs[release], src)
                        if not any(v.startswith("n/a") or "process died" in v for v in got.values()):
                            seen[n] = got
                            break
                    say(f"{older}..{newer} {n}/{len(commits) - 1} {commits[n][:12]}: "
                        + (json.dumps(seen[n]) if seen[n] else "skipped"))
                return seen[n]

            for i in ids:
                # The merge base may run on neither jaxlib (its version is the
                # one before the older release's): the older release is bad.
                ends = verdicts(0) or {i: "bad"}, verdicts(len(commits) - 1)
                if ends[1] is None or ends[0][i] != "bad" or ends[1][i] == "bad":
                    results[i] = {"error": f"the ends of {older}..{newer} say "
                                  f"{[e and e[i] for e in ends]}: nothing to bisect"}
                    continue
                fixed = ends[1][i]
                # (a verdict neither end's: the fuzzer asks an API the sources lack)
                lo, hi, _, skipped = bisect.narrowed(0, len(commits) - 1, lambda n: (
                    None if (v := verdicts(n)) is None or v[i] not in ("bad", fixed)
                    else v[i] == "bad"), MAX_SKIPPED)
                if hi - lo > 1:
                    results[i] = {"error": f"{hi - lo} commits left between {commits[lo][:12]} "
                                  f"and {commits[hi][:12]} ({len(skipped)} skipped)"}
                    say(f"{i}: {results[i]['error']}")
                    continue
                results[i] = {"first": commits[hi],
                              "subject": bisect._git(jax_repo, "log", "-1", "--format=%s", commits[hi])}
                say(f"{i}: {commits[hi][:12]} ({results[i]['subject'][:70]})")
    return results


def table() -> str:
    lines = [f"{len(FIXED)} fixed, {len(LIVE)} live (newest release {NEWEST})"]
    for b in sorted(CATALOGUE, key=lambda b: (b.kind, b.id)):
        span = f"{b.bad_on[0]}..{b.last_bad}" if len(b.bad_on) > 1 else b.last_bad
        fix = (f" fixed in {b.fixed_in} ({b.fixed_verdict[:40]}), commit {b.commit or 'unknown'}"
               if b.kind == "fixed" else "")
        lines.append(f"{b.kind:<5} {b.family:<9} {b.id:<55} bad {span}{fix}")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    repo = JAX_REPO
    if "--jax-repo" in argv:
        at = argv.index("--jax-repo")
        repo = argv[at + 1]
        del argv[at:at + 2]
    ids = [i for a in argv[1:] for i in a.split(",")]
    unknown = [i for i in ids if i not in BY_ID or BY_ID[i].kind != "fixed"]
    if unknown:
        print(f"error: not fixed bugs of the catalogue: {', '.join(unknown)}", file=sys.stderr)
        return 2
    bugs = [BY_ID[i] for i in ids] if ids else FIXED
    if not argv:
        print(table())
    elif argv[0] == "--check":
        rows = check(bugs, say=lambda s: print(s, file=sys.stderr))
        for row in rows:
            print(json.dumps(row))
        print(f"{sum(r['confirmed'] for r in rows)} of {len(rows)} bad on the buggy release and "
              f"not on the fixed one; {sum(r['as_recorded'] for r in rows)} with the fixed "
              "release's verdict as seen_on.json records it")
    elif argv[0] == "--find-commits":
        for i, found in find_commits(bugs, repo, say=lambda s: print(s, file=sys.stderr)).items():
            print(json.dumps({"id": i, **found}))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

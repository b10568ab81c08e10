"""Campaign benchmarks (measurements, not tests; nothing is asserted):

    python -m fuzz.bench_campaign throughput [SECONDS]   1 vs 2 workers, unpatched JAX
    PYTHONPATH=tests python -m fuzz.bench_campaign modes [SECONDS]
                        Hypothesis vs atheris: distinct planted bugs found per minute
                        (tests/campaign_plants.py:three_bugs)
    python -m fuzz.bench_campaign memory [SECONDS]       worker RSS over a long campaign
    python -m fuzz.bench_campaign exposure [SECONDS] [SEEDS]
                        median time to expose each known finding over SEEDS
                        campaigns (default 3) of SECONDS each, seeds 0, 1, ...
    python -m fuzz.bench_campaign rediscover BUDGET SEEDS [--releases R1,R2,...]
                        [--strategies S1,S2] (fuzz.campaign.STRATEGIES; e.g. swarm,invalid)
                        [--schedule all|cost] [--mode hypothesis|atheris|mixed]
                        [--filing inline|end] [--keep DIR]
                        the rediscovery benchmark (fuzz/rediscovery.py): on each
                        release (default: the newest, for the live bugs, and the
                        fewest older ones on which every fixed bug lives), SEEDS
                        campaigns of BUDGET seconds from an empty corpus, 2 workers,
                        each in that release's environment; per bug the median
                        time to exposure over its trials (the campaigns on the
                        releases it lives on; a miss counts as BUDGET) and how
                        many exposed it; per bug missed in some trial, the cases
                        drawn with its trigger and how many of them what shows
                        the bug reached; with --keep, the corpus files of its new
                        findings go to DIR/<release>-seed<seed>/ (per setting of a lever)
    python -m fuzz.bench_campaign swarm|refs|plain|copies|copies-beside-plain|schedule|mode|filing|unmask|project|defaults BUDGET SEEDS [--releases R1,...]
                        one lever, side by side: rediscover with each of its
                        settings (`LEVERS`: swarm,invalid and valid,swarm,invalid
                        against the default strategies; valid,refs,invalid
                        against them; plain programs as a quarter of the draws
                        and as half the ref programs against none; copy programs
                        as a quarter and a seventh of the draws against none,
                        and a seventh beside plain programs against none; --schedule
                        cost against all; --mode
                        atheris and mixed against hypothesis; --filing end
                        against inline; --unmask against not; --project against
                        not; the defaults
                        against the levers' winners together), the same seeds
                        and releases (default: the newest)
    PYTHONPATH=tests python -m fuzz.bench_campaign planted [BUDGET] [SEEDS]
                        one wrong-value bug planted per family (tests/campaign_plants.py
                        FAMILY_PLANTS: a discharge rule off by one), each in SEEDS
                        campaigns (default 5) of BUDGET seconds (default 60), 2 workers,
                        beside the same seeds unplanted: per family the median time
                        to its first new finding the unplanted run did not have
    PYTHONPATH=tests python -m fuzz.bench_campaign dedupe [BUDGET] [SEEDS]
                        one bug of many faces planted (tests/campaign_plants.py
                        MANY_FACED), SEEDS campaigns (default 3) of BUDGET seconds
                        (default 90), 2 workers, beside the same seeds unplanted:
                        per plant the distinct new signatures (one finding each,
                        as a wrong value's root cause was before rule isolation)
                        against the reports filed for them (one per root cause)
    python -m fuzz.bench_campaign reach CASES [SEEDS] [--lever swarm|refs|plain]
                        the generator's reach, without running JAX: for each
                        setting of the lever (default swarm), SEEDS (default 3) draws of
                        CASES cases each, and per benchmark bug how many of them
                        have its trigger (`known_findings`' trigger, a
                        necessary condition of the bug): a bug no case triggers
                        cannot be exposed, whatever runs the cases
    python -m fuzz.bench_campaign blocked CASES [SEEDS] [--strategies S1,S2] [--only BUG1,BUG2]
                        why a slow bug is slow: for each bug living on the
                        running JAX (or those named), of CASES cases drawn of
                        the strategies (default: a campaign's) per seed
                        (default 2), those with its trigger (at most 12 a bug)
                        run through every path and oracle, as a campaign with
                        --unmask: how many exposed it, and what stopped each
                        other one (its paths skipped, a known crash there, its
                        oracle not applying, or ran without showing it)
    python -m fuzz.bench_campaign orphans [KILLS]
                        `kill -9` of a 2-worker campaign's supervisor KILLS
                        times (default 10), each at a random moment: how many
                        workers were still alive 3 s later (Linux: /proc)

Each campaign runs in a fresh temporary directory (corpus, reports, database)
and prints one line of JSON with what it measured. With ``--write-docs``
those lines also go into the subcommand's section of docs/measurements.md
(``bench_campaign_modes``, ...; fuzz/measurements.py).
"""
from __future__ import annotations

import collections
import contextlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import jax
from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

from fuzz import oracles, rediscovery
from fuzz.measurements import ROOT, recording, take_flag
from fuzz.campaign import DEFAULT_STRATEGIES, workers
from fuzz.campaign.property import STRATEGY_MAKERS, reruns
from fuzz.campaign.supervisor import Campaign, CampaignConfig
from fuzz.suppressions import known_findings
from fuzz.triage import corpus, releases, reports

PLANTED = re.compile(r"returned a new value (float32|uint8|float16)\[")


def campaign(seconds: float, keep: str | None = None, filed: list | None = None,
             **options) -> dict:
    """One campaign in a fresh temporary directory; with ``keep``, the corpus
    files of its new findings (unminimized, unverified) are copied there to
    triage; ``filed`` gets the records of the reports it filed."""
    with tempfile.TemporaryDirectory() as tmp:
        config = CampaignConfig(budget_s=seconds, corpus_dir=f"{tmp}/corpus",
                                reports_dir=f"{tmp}/reports", out_dir=f"{tmp}/out",
                                database=f"{tmp}/db", **{"verify": False, **options})
        summary = Campaign(config).run()
        if filed is not None:
            filed.extend(reports.records(f"{tmp}/reports"))
        if keep:
            os.makedirs(keep, exist_ok=True)
            new = {x["id"] for x in summary["exposure"] if x["kind"] == "new"}
            for path in corpus.files(f"{tmp}/corpus", "regression"):
                if os.path.basename(path).removesuffix(".json") in new:
                    shutil.copy(path, keep)
        return summary


def steady_rate(summary) -> float:
    """Cases per second from the first case on (worker start-up left out)."""
    tl = [p for p in summary["timeline"] if p["cases"] > 0]
    if len(tl) < 2:
        return 0.0
    return (tl[-1]["cases"] - tl[0]["cases"]) / (tl[-1]["t"] - tl[0]["t"])


def throughput(seconds):
    rates = {}
    for n in (1, 2):
        s = campaign(seconds, workers=n, minimize=False)
        rates[n] = steady_rate(s)
        print(json.dumps({"workers": n, "cases": s["cases"], "seconds": s["seconds"],
                          "steady_cases_per_s": round(rates[n], 2),
                          "per_worker": s["workers"]}), flush=True)
    print(json.dumps({"scaling_2_over_1": round(rates[2] / rates[1], 2) if rates[1] else None}))


def modes(seconds):
    for mode in ("hypothesis", "atheris"):
        s = campaign(seconds, workers=1, mode=mode, strategies=["valid"],
                     setup=["campaign_plants:three_bugs"])
        found = {}
        for f in s["findings"]["new"]:
            if m := PLANTED.search(f["message"]):
                found.setdefault(m.group(1), f["t"])
        print(json.dumps({"mode": mode, "cases": s["cases"], "seconds": s["seconds"],
                          "planted_found": found, "of": 3,
                          "per_minute": round(len(found) / (s["seconds"] / 60), 2),
                          "all_new_findings": len(s["findings"]["new"])}), flush=True)


def memory(seconds):
    s = campaign(seconds, workers=1, minimize=False)
    tl = s["timeline"]
    print(json.dumps({"seconds": s["seconds"], "cases": s["cases"], "rss_mb": s["rss_mb"],
                      "restarts": s["restarts"],
                      "rss_over_time": [(p["t"], p["rss_mb"]) for p in tl[:: max(1, len(tl) // 20)]]}))


def exposure(seconds, seeds=3):
    """Each known finding's first hit (summary.json ``exposure``) in every
    seed's campaign; a seed that never hit it counts as the whole budget,
    the convention of fuzzer benchmarks, and says so (``exposed``)."""
    runs = []
    for seed in range(seeds):
        s = campaign(seconds, seed=seed, minimize=False)
        runs.append({x["id"]: x["t"] for x in s["exposure"] if x["kind"] == "known"})
        print(json.dumps({"seed": seed, "cases": s["cases"], "seconds": s["seconds"],
                          "known_exposed": len(runs[-1])}), flush=True)
    for fid in sorted({k for r in runs for k in r}, key=lambda k: statistics.median(
            r.get(k, seconds) for r in runs)):
        times = [r.get(fid, seconds) for r in runs]
        print(json.dumps({"known": fid, "median_s": statistics.median(times),
                          "exposed": f"{sum(fid in r for r in runs)}/{seeds}", "each_s": times}))


def _exposed_here(seconds, seed, options=None):
    """One campaign on the running JAX (run by `_campaign_on` in a release's
    environment), with ``options`` (`CampaignConfig` fields): each known
    finding's first hit, as one line of JSON."""
    options = dict(options or {})
    if keep := options.pop("keep", None):   # the new findings' cases, by release and seed
        keep = os.path.join(keep, f"{jax.__version__}-seed{seed}")
    s = campaign(seconds, keep=keep, workers=2, seed=seed, **{"minimize": False, **options})
    print(json.dumps({"jax": jax.__version__, "cases": s["cases"], "seconds": s["seconds"],
                      "compared": s["cases_per_oracle"], "paths": s["cases_per_path"],
                      "exposure": {x["id"]: x["t"] for x in s["exposure"] if x["kind"] == "known"},
                      "new": sorted(x["id"] for x in s["exposure"] if x["kind"] == "new"),
                      "triggers": s["triggers"],
                      "finished_filing": s.get("finished_filing"),
                      "errors": s.get("errors", [])}))


def _campaign_on(release, seconds, seed, options=None) -> dict:
    """`_exposed_here` run in ``release``'s environment (this interpreter's
    where it runs that release), this checkout on its path."""
    python = (sys.executable if jax.__version__ == release
              else releases.environment(release).python)
    with tempfile.TemporaryDirectory(prefix="discharge-fuzz-rediscover-") as tmp:
        proc = subprocess.run([python, "-m", "fuzz.bench_campaign", "rediscover-one",
                               str(seconds), str(seed), json.dumps(options or {})],
                              cwd=tmp, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)},
                              timeout=seconds + 600)
    try:
        answer = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise SystemExit(f"JAX {release}, seed {seed}: the campaign gave no answer: "
                         + (proc.stderr.strip().splitlines() or ["no output"])[-1]) from None
    if answer["jax"] != release:
        raise SystemExit(f"JAX {release}: its environment runs JAX {answer['jax']}")
    return answer


def rediscover(seconds, seeds, wanted=None, options=None):
    """The rediscovery benchmark: see the module's docstring and
    fuzz/rediscovery.py. A first hit later than the budget (the workers'
    last cases) counts as a miss."""
    run_on = releases.ordered(wanted or [rediscovery.NEWEST, *rediscovery.cover()])
    trials = {b.id: [] for b in rediscovery.CATALOGUE}
    for release in run_on:
        here = rediscovery.living_on(release)
        counted = {**(options or {}), "triggers": [b.id for b in here]}
        runs = [_campaign_on(release, seconds, seed, counted) for seed in range(seeds)]
        hits = {b.id: [r["exposure"].get(b.id) for r in runs] for b in here}
        hits = {i: [t if t is not None and t <= seconds else None for t in ts]
                for i, ts in hits.items()}
        for i, ts in hits.items():
            trials[i] += [((release, seed), t) for seed, t in enumerate(ts)]
        print(json.dumps({
            "release": release, "seeds": seeds,
            "options": {k: v for k, v in (options or {}).items() if k != "keep"} or "default",
            "cases": [r["cases"] for r in runs],
            # per oracle (values compared) and per path (runs), per minute
            "compared_per_min": _per_minute([r["compared"] for r in runs], runs),
            "path_runs_per_min": _per_minute([r["paths"] for r in runs], runs),
            "seconds": [r["seconds"] for r in runs],
            # filing after the workers stopped (the budget's own, not the fuzzing's)
            "finished_filing": [r.get("finished_filing") for r in runs],
            "bugs_living_here": {"fixed": sum(b.kind == "fixed" for b in here),
                                 "live": sum(b.kind == "live" for b in here)},
            "exposed": sum(any(t is not None for t in ts) for ts in hits.values()),
            "first_exposure_s": {i: ts for i, ts in hits.items() if any(t is not None for t in ts)},
            "new_findings": sorted({f for r in runs for f in r["new"]}),
            "errors": [e for r in runs for e in r["errors"]]}), flush=True)
        _triggers(here, hits, runs)
    rows = _medians(trials, seconds, "bug")
    root_rows = _medians(by_root(trials), seconds, "root cause",
                         kind_of=lambda r: rediscovery.BY_ID[r].kind)
    summary = {}
    for kind in ("fixed", "live"):
        every = [b for b in rediscovery.CATALOGUE if b.kind == kind]
        summary[kind] = {"kind": kind, "bugs": len(every),
                         "not_run": sorted(b.id for b in every if not trials[b.id]),
                         **_shares([r for r in rows if r[0] == kind], seconds),
                         "root_causes": _shares([r for r in root_rows if r[0] == kind], seconds)}
        print(json.dumps(summary[kind]))
    return summary


def _triggers(bugs, hits, runs):
    """Print, per bug of ``bugs`` that some of ``runs`` missed, the cases
    drawn with its trigger over all runs, and of those how many what shows
    the bug reached (`property.count_triggers`): what to change to expose
    it, the generator (few drawn), the schedule or a refusal (few reached)
    or the trigger's width (many reached)."""
    missed = [b.id for b in bugs if None in hits[b.id]]
    if not missed:
        return
    print(f"\nper bug missed in some trial: cases with its trigger, and of those "
          f"reached by what shows it, over {len(runs)} runs")
    print(f"{'bug':<56}{'drawn':>8}{'reached':>9}{'exposed':>9}")
    for i in sorted(missed):
        drawn, reached = (sum(r["triggers"].get(i, (0, 0))[k] for r in runs) for k in (0, 1))
        exposed = sum(t is not None for t in hits[i])
        print(f"{i:<56}{drawn:>8}{reached:>9}{f'{exposed}/{len(runs)}':>9}")


def by_root(trials: dict) -> dict:
    """``trials`` (bug id -> [(trial key, first exposure s or None)]) per
    root cause (`rediscovery.Bug.root`): a trial exposes a root cause when
    it exposes any of its faces, at the first of them."""
    roots = {}
    for i, ts in trials.items():
        mine = roots.setdefault(rediscovery.BY_ID[i].root, {})
        for key, t in ts:
            seen = mine.setdefault(key, t)
            mine[key] = t if seen is None else seen if t is None else min(seen, t)
    return {r: list(ts.items()) for r, ts in roots.items()}


def _medians(trials, seconds, what, kind_of=lambda i: rediscovery.BY_ID[i].kind) -> list[tuple]:
    """Print and return, per id of ``trials`` (id -> [(trial key, first
    exposure s or None)]), ``(kind, median s, id, trials, exposed)``."""
    print(f"\nper {what}, over its trials (SEEDS x the releases run that it lives on), "
          f"budget {seconds:g} s; a miss counts as {seconds:g} s")
    print(f"{'kind':<6}{what:<56}{'trials':>7}{'median_s':>10}{'exposed':>9}")
    rows = []
    for i, ts in trials.items():
        if ts:
            times = [t for _, t in ts]
            median = statistics.median(seconds if t is None else t for t in times)
            rows.append((kind_of(i), median, i, len(times), sum(t is not None for t in times)))
    for kind, median, i, n, k in sorted(rows):
        print(f"{kind:<6}{i:<56}{n:>7}{median:>10.1f}{f'{k}/{n}':>9}")
    return rows


def _shares(rows, seconds) -> dict:
    """The summary of `_medians`' rows: how many were run, exposed in some
    trial, and exposed with a median under the budget (issue 35's target)."""
    if not rows:
        return {"run": 0}
    return {"run": len(rows),
            "median_under_budget": sum(r[1] < seconds for r in rows),
            "share_median_under_budget": round(sum(r[1] < seconds for r in rows) / len(rows), 2),
            "exposed_in_some_trial": sum(r[4] > 0 for r in rows),
            "share_exposed": round(sum(r[4] > 0 for r in rows) / len(rows), 2),
            "share_of_trials_exposing": round(sum(r[4] for r in rows) / sum(r[3] for r in rows), 2),
            "median_of_medians_s": statistics.median(r[1] for r in rows)}


def planted(seconds, seeds):
    """Time to expose a planted bug, per family: see the module's docstring."""
    import campaign_plants   # tests/, on PYTHONPATH: the plants are test code
    os.environ.setdefault("CAMPAIGN_PLANTS_DIR", tempfile.mkdtemp())
    unplanted = set()
    for seed in range(seeds):
        s = campaign(seconds, workers=2, seed=seed, minimize=False)
        new = {x["id"] for x in s["exposure"] if x["kind"] == "new"}
        unplanted |= new
        print(json.dumps({"plant": None, "seed": seed, "cases": s["cases"], "new": sorted(new)}),
              flush=True)
    rows = {}
    for family, plant in campaign_plants.FAMILY_PLANTS.items():
        times = []
        for seed in range(seeds):
            s = campaign(seconds, workers=2, seed=seed, minimize=False,
                         setup=[f"campaign_plants:{plant}"])
            hits = sorted((x["t"], x["id"]) for x in s["exposure"]
                          if x["kind"] == "new" and x["id"] not in unplanted)
            times.append(hits[0][0] if hits else None)
            print(json.dumps({"plant": plant, "seed": seed, "cases": s["cases"],
                              "first": hits[0] if hits else None}), flush=True)
        rows[family] = {"plant": plant, "median_s": statistics.median(
            seconds if t is None else t for t in times), "exposed": f"{sum(t is not None for t in times)}/{seeds}",
            "each_s": times}
    for family, row in rows.items():
        print(json.dumps({"family": family, **row}))


def dedupe(seconds, seeds):
    """Reports against signatures for one bug of many faces: see the module's docstring."""
    import campaign_plants   # tests/, on PYTHONPATH: the plants are test code
    os.environ.setdefault("CAMPAIGN_PLANTS_DIR", tempfile.mkdtemp())
    unplanted = set()
    for seed in range(seeds):
        filed = []
        campaign(seconds, workers=2, seed=seed, minimize=False, filed=filed)
        unplanted |= {r["signature"] for r in filed} | {
            i["signature"] for r in filed for i in r.get("instances", ())}
    for plant in campaign_plants.MANY_FACED:
        for seed in range(seeds):
            filed = []
            s = campaign(seconds, workers=2, seed=seed, minimize=False, filed=filed,
                         setup=[f"campaign_plants:{plant}"])
            new = [r for r in filed if r["signature"] not in unplanted]
            faces = [i for r in new for i in r.get("instances", ())
                     if i["signature"] not in unplanted]
            print(json.dumps({
                "plant": plant, "seed": seed, "cases": s["cases"],
                "signatures": len(new) + len(faces), "reports": len(new),
                "root_causes": sorted(r.get("root_cause") or "-" for r in new)}), flush=True)


def _per_minute(counts: list[dict], runs) -> dict:
    """Each name's count per minute over ``runs`` together."""
    minutes = sum(r["seconds"] for r in runs) / 60 or 1
    names = sorted({n for c in counts for n in c})
    return {n: round(sum(c.get(n, 0) for c in counts) / minutes, 1) for n in names}


# Each lever's settings, the first the default it was measured against: (name,
# campaign options).
LEVERS = {
    "swarm": [("default", {"strategies": ["valid", "invalid"]}),
              ("swarm", {"strategies": ["swarm", "invalid"]}),
              ("both", {"strategies": ["valid", "swarm", "invalid"]})],
    "refs": [("default", {"strategies": ["valid", "invalid"]}),
             ("refs", {"strategies": ["valid", "refs", "invalid"]})],
    # plain programs as a quarter of the draws, or as half the ref programs
    # (a strategy named twice is drawn twice as often)
    "plain": [("default", {"strategies": ["valid", "refs", "invalid"]}),
              ("own-quarter", {"strategies": ["valid", "refs", "plain", "invalid"]}),
              ("half-of-refs", {"strategies": ["valid", "valid", "refs", "plain", "invalid",
                                               "invalid"]})],
    # copy programs (real DMA semaphores, indexed views, half on a mesh) as
    # a quarter of the draws, and as a seventh
    "copies": [("default", {"strategies": ["valid", "refs", "invalid"]}),
               ("copies", {"strategies": ["valid", "refs", "copies", "invalid"]}),
               ("seventh", {"strategies": ["valid", "valid", "refs", "refs", "copies",
                                           "invalid", "invalid"]})],
    # copy programs for a seventh of the draws, beside plain programs (stop 60)
    "copies-beside-plain": [("before", {"strategies": ["valid", "valid", "refs", "plain", "invalid",
                                                        "invalid"]}),
                            ("seventh", {"strategies": ["valid", "valid", "refs", "plain", "copies",
                                                        "invalid", "invalid"]})],
    # the defaults before ten-minute campaigns chose them against today's
    # (valid,refs,invalid with --schedule cost)
    "defaults": [("before", {"strategies": ["valid", "invalid"], "schedule": "all"}),
                 ("after", {"strategies": ["valid", "refs", "invalid"], "schedule": "cost"})],
    "schedule": [("all", {"schedule": "all", "strategies": ["valid", "invalid"]}),
                 ("cost", {"schedule": "cost", "strategies": ["valid", "invalid"]})],
    # today's cost schedule (features one by one) against each pair of features too
    "pairs": [("cost", {"schedule": "cost"}), ("pairs", {"schedule": "pairs"})],
    "mode": [("hypothesis", {"mode": "hypothesis"}), ("atheris", {"mode": "atheris"}),
             ("mixed", {"mode": "mixed"})],
    # a new finding shrunk, minimized and verified on its worker, or after
    # the workers stop (`fuzz.campaign.FILINGS`)
    # (both as a user runs them: minimized and verified, which other levers skip)
    # a case a known crash stopped run again without its trigger, or not
    "unmask": [("off", {"unmask": False}), ("on", {"unmask": True})],
    # a case a path refused run there as that path can, or not
    "project": [("off", {"project": False}), ("on", {"project": True})],
    "filing": [("inline", {"filing": "inline", "minimize": True, "verify": True}),
               ("end", {"filing": "end", "minimize": True, "verify": True})],
}


def lever(which, seconds, seeds, wanted=None, keep=None):
    """One lever's settings (`LEVERS`) on the rediscovery benchmark, side
    by side: the same releases (default: the newest only) and seeds, one
    after the other."""
    wanted = wanted or [rediscovery.NEWEST]
    results = {}
    for name, options in LEVERS[which]:
        print(f"\n== {which} {name}: {options or 'the defaults'}", flush=True)
        results[name] = rediscover(seconds, seeds, wanted, {
            **options, **({"keep": os.path.join(keep, name)} if keep else {})})
    print("\nside by side (per kind: bugs with a median under the budget, exposed in some "
          "trial, share of trials exposing, median of the medians; the same of root causes)")
    keys = ("run", "median_under_budget", "exposed_in_some_trial", "share_of_trials_exposing",
            "median_of_medians_s")
    for kind in ("fixed", "live"):
        row = {name: {**{k: r[kind].get(k) for k in keys},
                      "root_causes": {k: r[kind]["root_causes"].get(k) for k in keys}}
               for name, r in results.items()}
        print(json.dumps({"kind": kind, **row}))


def _drawn(strategy_names, n, seed) -> list:
    """``n`` cases as a campaign's Hypothesis worker draws them (generation
    only: no database, no shrinking)."""
    cases = []

    @hseed(seed)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(*[STRATEGY_MAKERS[name]() for name in strategy_names]))
    def draw(case):
        cases.append(case)
    draw()
    return cases


def reach(n, seeds=3, which="swarm"):
    """Per benchmark bug, the cases of each of lever ``which``'s arms
    (those that draw cases otherwise) that have its trigger: see the
    module's docstring."""
    bugs = [(b, known_findings.BY_ID[b.id]) for b in rediscovery.CATALOGUE]
    arms = [(name, options["strategies"]) for name, options in LEVERS[which]
            if "strategies" in options]
    counts = {}
    for name, strategy_names in arms:
        counts[name] = {b.id: [] for b, _ in bugs}
        for seed in range(seeds):
            cases = _drawn(strategy_names, n, seed)
            for b, k in bugs:
                counts[name][b.id].append(sum(bool(known_findings.with_trigger(k, case))
                                              for case in cases))
        print(json.dumps({"setting": name, "strategies": strategy_names, "cases": n,
                          "seeds": seeds}), flush=True)
    print(f"\nper bug, the cases of {n} (each seed's) that have its trigger")
    print(f"{'kind':<6}{'bug':<56}" + "".join(f"{name:>18}" for name, _ in arms))
    for b, _ in sorted(bugs, key=lambda bk: (bk[0].kind, bk[0].id)):
        print(f"{b.kind:<6}{b.id:<56}" + "".join(
            f"{','.join(map(str, counts[name][b.id])):>18}" for name, _ in arms))
    for kind in ("fixed", "live"):
        print(json.dumps({"kind": kind, "bugs": sum(b.kind == kind for b, _ in bugs), **{
            name: {"triggered_in_every_seed": sum(
                       min(ts) > 0 for i, ts in counts[name].items() if rediscovery.BY_ID[i].kind == kind),
                   "never_triggered": sum(
                       max(ts) == 0 for i, ts in counts[name].items() if rediscovery.BY_ID[i].kind == kind)}
            for name, _ in arms}}))


def blocked(n, seeds=2, strategy_names=DEFAULT_STRATEGIES, only=None, per_bug=12):
    """Per live bug (or those of ``only``), its triggered cases among ``n``
    drawn of ``strategy_names`` (each seed's), at most ``per_bug`` of them
    run through every path and oracle, unmasked once as a campaign does:
    how many exposed it, and what stopped the others (`_stopped`)."""
    here = jax.__version__
    bugs = [b for b in rediscovery.living_on(here) if only is None or b.id in only]
    if only is not None and (unknown := set(only) - {b.id for b in bugs}):
        raise SystemExit(f"error: not a bug living on JAX {here}: {', '.join(sorted(unknown))}")
    stopped = {b.id: collections.Counter() for b in bugs}
    triggered = collections.Counter()
    for seed in range(seeds):
        for case in _drawn(strategy_names, n, seed):
            mine = [b for b in bugs if known_findings.with_trigger(b.entry, case)]
            triggered.update(b.id for b in mine)
            mine = [b for b in mine if sum(stopped[b.id].values()) < per_bug]
            if not mine:
                continue
            with _quiet():   # (the programs' debug prints, the TPU interpreter's tracebacks)
                reports = [oracles.check(case)]
                reports += [oracles.check(again, on_paths=on_paths) for _, again, on_paths in
                            reruns(case, reports[0], unmask=True, project=True)]
            for b in mine:
                stopped[b.id][_stopped(b, reports)] += 1
    print(json.dumps({"jax": here, "strategies": list(strategy_names), "cases": n,
                      "seeds": seeds, "per_bug": per_bug}))
    print(f"\nper bug: cases with its trigger (of {n} x {seeds}), and of those run (at most "
          f"{per_bug}), what each came to")
    for b in sorted(bugs, key=lambda b: b.id):
        ran = stopped[b.id]
        print(f"{b.id}: {triggered[b.id]} triggered; of {sum(ran.values())} run: " + "; ".join(
            f"{k} {why}" for why, k in ran.most_common()))


@contextlib.contextmanager
def _quiet():
    """Standard output and error (the file descriptors: JAX's callbacks
    write there from C++) to /dev/null."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1), os.dup2(null.fileno(), 2)
    try:
        yield
    finally:
        sys.stdout.flush(), sys.stderr.flush()
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)


def _stopped(bug, reports) -> str:
    """What a case with ``bug``'s trigger came to (``reports``: the case's,
    then its unmasked one's): exposed; where no path the bug shows on ran
    it to the end, a known crash that stopped one (after unmasking), a new
    failure, the reason one was skipped, or refusals the unsupported table
    lists, in that order; else the bug's oracles not applying (the reason),
    or compared without showing it (a trigger wider than the bug)."""
    for report in reports:
        if any(f.known is not None and known_findings.root_id(known_findings.BY_ID[f.known])
               == bug.root for f in report.failures):
            return "exposed" + (" once unmasked" if report is not reports[0] else "")
    first = reports[0]
    wanted = [p for p in first.case.paths if not bug.entry.paths or p in bug.entry.paths]
    # Each path's last run (the unmasked one where a known crash stopped it).
    last = {o.path: (o, r) for r in reports for o in r.outcomes if o.path in wanted}
    if not any(o.error is None for o, _ in last.values()):
        failed = [f.known for o, r in last.values() for f in r.failures
                  if f.path == o.path and f.oracle == "valid-runs"]
        if known := [k for k in failed if k is not None]:
            return f"failed: {known[0]}"
        if failed:
            return "failed: a new failure"
        if skipped := [first.skipped[p] for p in wanted if p in first.skipped]:
            return f"skipped: {skipped[0]}"
        return "refused (unsupported)"
    by = {oracle for oracle, _ in bug.entry.symptoms}
    why = next((r.not_applied[o] for r in reversed(reports) for o in sorted(by)
                if o in r.not_applied), None)
    if why and not any(r.compared.get(o) for r in reports for o in by):
        return f"oracle not applied: {why}"
    return "ran, not shown"


def _children(pid) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return kids


def _alive(pid) -> bool:
    """Running, not a zombie (an orphan's zombie lingers where nothing reaps)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def orphans(kills=10, after_s=3.0, within_s=5.0):
    """Each time a fresh `discharge-fuzz run` with 2 workers on unpatched JAX,
    killed (SIGKILL) at a random moment up to ``within_s`` after both workers
    started their first case; its workers still alive ``after_s`` later are
    counted, then killed."""
    total = 0
    for n in range(1, kills + 1):
        with tempfile.TemporaryDirectory() as tmp:
            supervisor = subprocess.Popen(
                [sys.executable, "-m", "fuzz.cli", "run", "--budget", "10m", "--workers", "2",
                 "--corpus", f"{tmp}/corpus", "--reports", f"{tmp}/reports",
                 "--out", f"{tmp}/out", "--database", f"{tmp}/db", "--no-verify"],
                cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 300
            while not all(os.path.exists(workers.inflight_path(f"{tmp}/out/state", i))
                          for i in (0, 1)):
                if supervisor.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"kill {n}: the workers never started a case")
                time.sleep(0.1)
            delay = random.uniform(0, within_s)
            time.sleep(delay)
            pids = _children(supervisor.pid)
            supervisor.kill()
            supervisor.wait()
            time.sleep(after_s)
            left = [pid for pid in pids if _alive(pid)]
            for pid in pids:   # each leads its own process group
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        total += len(left)
        print(json.dumps({"kill": n, "delay_s": round(delay, 2), "workers": len(pids),
                          f"alive_after_{after_s:g}s": len(left)}), flush=True)
    print(json.dumps({"kills": kills, f"workers_alive_after_{after_s:g}s": total}))


def main(argv=None):
    argv, write_docs = take_flag(argv or sys.argv[1:])
    if argv[:1] in (["-h"], ["--help"]):
        return print(__doc__)
    if argv[:1] == ["rediscover-one"]:   # one campaign of `rediscover`, in a release's environment
        return _exposed_here(float(argv[1]), int(argv[2]), json.loads(argv[3]) if len(argv) > 3 else None)
    which = argv[0] if argv else "throughput"
    seconds = float(argv[1]) if len(argv) > 1 else 60.0
    with recording(f"bench_campaign_{which}", write_docs, "fuzz.bench_campaign", argv):
        if which == "reach":
            lever_name = argv[argv.index("--lever") + 1] if "--lever" in argv else "swarm"
            if lever_name not in LEVERS:
                raise SystemExit(f"error: --lever {lever_name!r}: one of {', '.join(LEVERS)}")
            argv = [a for a in argv if a not in ("--lever", lever_name)]
            return reach(int(argv[1]), int(argv[2]) if len(argv) > 2 else 3, lever_name)
        if which == "blocked":
            flags, rest, words = {}, [], iter(argv)
            for word in words:
                if word in ("--strategies", "--only"):
                    flags[word.lstrip("-")] = next(words, "").split(",")
                else:
                    rest.append(word)
            if bad := [s for s in flags.get("strategies", ()) if s not in STRATEGY_MAKERS]:
                raise SystemExit(f"error: --strategies {','.join(bad)}: each one of "
                                 f"{', '.join(STRATEGY_MAKERS)}")
            if not (2 <= len(rest) <= 3 and all(w.isdigit() for w in rest[1:])):
                raise SystemExit("error: usage: blocked CASES [SEEDS] [--strategies S1,S2] "
                                 "[--only BUG1,BUG2]")
            return blocked(int(rest[1]), int(rest[2]) if len(rest) > 2 else 2,
                           flags.get("strategies", DEFAULT_STRATEGIES), flags.get("only"))
        if which == "orphans":
            return orphans(int(argv[1]) if len(argv) > 1 else 10)
        if which == "rediscover" or which in LEVERS:
            rest, flags, words = [], {}, iter(argv)
            for word in words:   # (--releases R1,R2, --strategies S1,S2, --schedule S, --mode M,
                # --filing F, --keep DIR)
                if word in ("--releases", "--strategies", "--schedule", "--mode", "--filing", "--keep"):
                    flags[word.lstrip("-")] = next(words, "")
                else:
                    rest.append(word)
            budget, seeds = (float(rest[1]) if len(rest) > 1 else 60.0,
                             int(rest[2]) if len(rest) > 2 else 3)
            wanted = flags.pop("releases").split(",") if "releases" in flags else None
            if "keep" in flags:
                flags["keep"] = os.path.abspath(flags["keep"])
            if which in LEVERS:
                return lever(which, budget, seeds, wanted, flags.get("keep"))
            if "strategies" in flags:
                flags["strategies"] = flags["strategies"].split(",")
            rediscover(budget, seeds, wanted, flags or None)
            return None
        if which == "planted":
            return planted(seconds, int(argv[2]) if len(argv) > 2 else 5)
        if which == "dedupe":
            return dedupe(float(argv[1]) if len(argv) > 1 else 90.0,
                          int(argv[2]) if len(argv) > 2 else 3)
        if which == "exposure":
            return exposure(seconds, int(argv[2]) if len(argv) > 2 else 3)
        simple = {"throughput": throughput, "modes": modes, "memory": memory}
        if which not in simple:
            raise SystemExit(f"error: unknown benchmark {which!r} (python -m fuzz.bench_campaign "
                             "--help lists them)")
        simple[which](seconds)


if __name__ == "__main__":
    main()

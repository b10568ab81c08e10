"""``discharge-fuzz run``: the campaign's flags and what the command does
with them (the rest of the command line is in `fuzz.cli`)."""
from __future__ import annotations

import argparse
import os
import re
import sys

from fuzz.campaign import (DEFAULT_FILING, DEFAULT_PROJECT, DEFAULT_SCHEDULE, DEFAULT_STRATEGIES,
                            DEFAULT_UNMASK, FILINGS, SCHEDULES, STRATEGIES)
from fuzz.campaign.workers import load_hook
from fuzz.exits import EXIT_ERROR

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> float:
    """``90s``, ``30m``, ``8h``, ``1h30m`` or plain seconds -> seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd]?)", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 30m, 8h")
    seconds = sum(float(n) * _UNITS[u or "s"] for n, u in parts)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be more than 0s")
    return seconds


def _count(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be >= 1")
    return value


def _names(text):
    return [s.strip() for s in text.split(",") if s.strip()]


def add(sub) -> None:
    run = sub.add_parser("run", help="a time-budgeted fuzzing campaign on all cores")
    a = run.add_argument
    a("--budget", type=duration, default=duration("60s"),
      help="wall-clock budget, e.g. 90s, 30m, 8h (default 60s)")
    a("--workers", type=_count, default=len(os.sched_getaffinity(0)),
      help="worker processes (default: all cores)")
    a("--mode", choices=("hypothesis", "atheris", "mixed"), default="hypothesis",
      help="how workers draw cases: Hypothesis' generator, atheris coverage guidance, "
           "or half each (default hypothesis: it finds more per minute, see README)")
    a("--seed", type=int, default=None,
      help="seeds the workers' draws, Hypothesis and atheris alike, so a campaign repeats "
           "(Hypothesis then uses no example database; without --seed it resumes from it)")
    a("--paths", type=_names, default=None, help="comma-separated discharge paths (default all)")
    a("--oracles", type=_names, default=None, help="comma-separated oracles to report (default all)")
    a("--strategies", type=_names, default=list(DEFAULT_STRATEGIES),
      help="comma-separated: valid, invalid, swarm (valid programs, each of a drawn "
           "subset of statement kinds, transforms and dtypes), refs (data refs alone, "
           "no semaphore or copy), plain (refs programs with no Pallas API and only "
           "indexed views), copies (kernels copying between indexed views on real DMA "
           "semaphores, half on a 2-device mesh, run on the TPU interpreter and the discharge "
           f"alone); default {','.join(DEFAULT_STRATEGIES)}")
    a("--schedule", choices=SCHEDULES, default=DEFAULT_SCHEDULE,
      help="all: every path and oracle on every case; cost: the costly ones (COST >= 3) "
           f"on cases with a feature they have not worked on, else at a floor rate; pairs: "
           f"as cost, each pair of features counted too (default {DEFAULT_SCHEDULE})")
    a("--filing", choices=FILINGS, default=DEFAULT_FILING,
      help="inline: a worker shrinks, minimizes and verifies a new finding as it finds it; "
           "end: it files the finding unverified and fuzzes on, and the campaign completes "
           f"it after the workers stop (default {DEFAULT_FILING})")
    a("--unmask", action=argparse.BooleanOptionalAction, default=DEFAULT_UNMASK,
      help="run a case a known crash stopped on some path again, on those paths, without "
           "the statements that triggered it, so a bug behind the known one shows; so "
           "too a case a path refused as unsupported (a transposed view) "
           f"(default {'on' if DEFAULT_UNMASK else 'off'})")
    a("--project", action=argparse.BooleanOptionalAction, default=DEFAULT_PROJECT,
      help="run a case a path refused (the eager path: semaphores, pltpu.load, reshaped "
           "views) again there, without the statements it cannot run "
           f"(default {'on' if DEFAULT_PROJECT else 'off'})")
    a("--finish-filing", type=duration, default=duration("5m"),
      help="after the workers stop: time to minimize and verify the findings filed "
           "unverified (all of them with --filing end) (default 5m)")
    a("--database", default=os.path.join("corpus", "db"),
      help="example database: a directory or redis://host:port/db (default corpus/db)")
    a("--corpus", default="corpus", help="corpus directory (default corpus)")
    a("--reports", default="reports", help="bug reports directory (default reports)")
    a("--out", default=os.path.join("runs", "latest"),
      help="run outputs: summary.json, junit.xml, summary.html (default runs/latest)")
    a("--case-timeout", type=duration, default=duration("30s"),
      help="a case running longer is a hang: a 'timeout' finding (default 30s)")
    a("--max-rss-mb", type=_count, default=None,
      help="a worker above this resident memory is killed: an 'oom' finding (default: no limit)")
    a("--recycle-after", type=_count, default=2000,
      help="replace each worker after this many cases, to keep memory flat (default 2000)")
    a("--clear-caches-every", type=_count, default=100,
      help="jax.clear_caches() in each worker every this many cases (default 100)")
    a("--max-examples", type=_count, default=None,
      help="stop after this many cases in all (default: only the budget)")
    a("--include-known", action="store_true",
      help="report known findings as new ones, instead of counting them")
    a("--unsupported-are-findings", action="store_true",
      help="report a path refusing a valid program as unsupported as a finding too")
    a("--no-minimize", dest="minimize", action="store_false",
      help="file findings as found, without IR minimization")
    a("--no-verify", dest="verify", action="store_false",
      help="do not verify reproducers in a fresh interpreter")
    a("--worker-setup", action="append", default=[], metavar="MODULE:FUNCTION",
      help="call this in every worker before fuzzing (e.g. to try a JAX patch); repeatable")
    a("--quiet", action="store_true", help="no progress line")


def _oracle_names() -> set[str]:
    from fuzz import oracles  # heavy: kept out of CLI start-up
    names, todo = set(), [oracles.OracleFailure]
    while todo:
        cls = todo.pop()
        names.add(cls.oracle)
        todo += cls.__subclasses__()
    return names - {oracles.OracleFailure.oracle}


def _check(args) -> str | None:
    """The first thing wrong with the flags, as one line, or None."""
    from fuzz import ir  # numpy: kept out of CLI start-up
    if bad := [s for s in args.strategies if s not in STRATEGIES] or not args.strategies:
        return (f"--strategies must name some of {', '.join(STRATEGIES)}, "
                f"got {','.join(bad or ['nothing'])}")
    if args.paths is not None and (bad := [p for p in args.paths if p not in ir.PATHS] or not args.paths):
        return f"--paths: unknown path {bad[0] if bad else '(none)'!r}; known: {', '.join(ir.PATHS)}"
    if args.oracles is not None:
        known = _oracle_names()
        if bad := [o for o in args.oracles if o not in known] or not args.oracles:
            return f"--oracles: unknown oracle {bad[0] if bad else '(none)'!r}; known: {', '.join(sorted(known))}"
    for spec in args.worker_setup:
        try:
            load_hook(spec)
        except Exception as e:  # noqa: BLE001 - any import problem is one line
            return f"--worker-setup {spec}: {type(e).__name__}: {e}"
    from fuzz.campaign.database import DatabaseError, open_database  # heavy: as above
    try:
        open_database(args.database, check=True)
    except DatabaseError as e:
        return f"--database: {e}"
    except OSError as e:
        return f"--database {args.database}: {e}"
    return None


def main(args) -> int:
    from fuzz import compat  # JAX: kept out of CLI start-up
    try:
        compat.check_version()
    except compat.UnsupportedJax as e:
        print(f"discharge-fuzz: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    if problem := _check(args):
        print(f"discharge-fuzz: error: {problem}", file=sys.stderr)
        return EXIT_ERROR
    from fuzz.campaign import summary  # heavy: kept out of CLI start-up
    from fuzz.campaign.supervisor import Campaign, CampaignConfig  # heavy: kept out of CLI start-up
    config = CampaignConfig(
        budget_s=args.budget, workers=args.workers, mode=args.mode, seed=args.seed,
        strategies=args.strategies, paths=args.paths, oracles=args.oracles, schedule=args.schedule,
        filing=args.filing, finish_filing_s=args.finish_filing, unmask=args.unmask,
        project=args.project,
        include_known=args.include_known, unsupported_are_findings=args.unsupported_are_findings,
        database=args.database, corpus_dir=args.corpus,
        reports_dir=args.reports, out_dir=args.out, case_timeout_s=args.case_timeout,
        max_rss_mb=args.max_rss_mb, recycle_after=args.recycle_after,
        clear_caches_every=args.clear_caches_every, max_cases=args.max_examples,
        minimize=args.minimize, verify=args.verify, setup=args.worker_setup)
    progress = None if args.quiet else summary.Progress()
    print(f"campaign: {args.workers} {args.mode} worker(s) for {args.budget:g}s, "
          f"database {args.database}, outputs in {args.out}", flush=True)
    try:
        result = Campaign(config, progress=progress).run()
    except Exception as e:  # noqa: BLE001 - the campaign itself failed: one line, exit 2
        print(f"discharge-fuzz: error: campaign failed: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ERROR
    if progress:
        progress.done()
    print(summary.text(result, args.out))
    return result["exit_code"]

"""The property every test and the main job run, and a campaign around it.

`check_property(case)` runs a case through all its paths and oracles and
raises the first failure that is not a known finding; known findings are
counted instead. `run_campaign` hands it to Hypothesis for a number of
examples and collects every distinct (shrunk) failure.
"""
from __future__ import annotations

import collections
import time
import unittest
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings, strategies as st

from fuzz import oracles, paths
from fuzz.suppressions import known_findings, unsupported
from fuzz.triage import corpus, findings
from fuzz.campaign import STRATEGIES
from strategies.programs import (copy_programs, invalid_programs, plain_programs, programs,
                                ref_programs, swarm_programs)


@dataclass
class Stats:
    cases: collections.Counter = field(default_factory=collections.Counter)
    skipped: collections.Counter = field(default_factory=collections.Counter)
    known: collections.Counter = field(default_factory=collections.Counter)
    already_found: collections.Counter = field(default_factory=collections.Counter)
    undefined: int = 0     # valid cases the model gives no meaning (see fuzz/model.py)
    unmasked: int = 0      # cases run again without a known crash's trigger (`check_property`)
    projected: int = 0     # cases run again as a path that refused them can (`check_property`)
    # Valid cases by the model's verdict (defined, deadlock, racy, ...).
    verdicts: collections.Counter = field(default_factory=collections.Counter)
    # Cases on a mesh, by its size, and those valid by size and verdict ("4 racy").
    meshes: collections.Counter = field(default_factory=collections.Counter)
    # Valid cases a path refused as the unsupported table lists: entry id.
    unsupported: collections.Counter = field(default_factory=collections.Counter)
    # What JAX did only because of the fuzzer's stand-ins (`CaseReport.artifacts`).
    artifacts: collections.Counter = field(default_factory=collections.Counter)
    compared: collections.Counter = field(default_factory=collections.Counter)  # per oracle
    # Every finding the case hit, known ones too: its id (a known finding's
    # own) -> "known" | "filed before" | "new" (time to exposure).
    hits: dict = field(default_factory=dict)
    # Known findings whose trigger the case has (`count_triggers`): id ->
    # [cases drawn with it, of those reached by what shows it].
    triggers: dict = field(default_factory=dict)
    failures: list[oracles.OracleFailure] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.cases["case"]


# Counts for the pytest session summary (tests/conftest.py prints it).
SESSION = Stats()


def check_property(case, stats: Stats = SESSION, include_known=False, *,
                   on_paths=None, only_oracles=None, already_found=None,
                   unsupported_are_findings=False, unmask=False,
                   project=False) -> oracles.CaseReport:
    """Run ``case`` everywhere (or ``on_paths``); raise its first unknown
    failure. A campaign narrows what counts with ``only_oracles`` (names) and
    ``already_found(failure) -> bool`` (what it has filed already: counted,
    not raised again, so Hypothesis does not shrink it once more). With
    ``unmask``, a case a known crash stopped runs again without what
    triggered it (`known_findings.unmasked`); with ``project``, a case a
    path refused runs there as it can (`fuzz.paths.projected`); the first
    unknown failure of either is raised."""
    # (an empty ``only_oracles`` is a plan that skipped every named one: none)
    report = oracles.check(case, on_paths=on_paths,
                           oracles=oracles.ORACLE_NAMES if only_oracles is None else only_oracles,
                           unsupported_are_findings=unsupported_are_findings)
    stats.undefined += bool(report.undefined)
    if report.verdict:
        stats.verdicts[report.verdict] += 1
    if case.devices is not None:
        stats.meshes[str(case.devices)] += 1
        if report.verdict:
            stats.meshes[f"{case.devices} {report.verdict}"] += 1
    for _, entry, _ in report.unsupported:
        stats.unsupported[entry.id] += 1
    stats.artifacts.update(report.artifacts)
    stats.cases["case"] += 1
    stats.compared.update(report.compared)
    for o in report.outcomes:
        stats.cases[o.path] += 1
    for path in report.skipped:
        stats.skipped[path] += 1
    unknown = []
    for f in report.failures:
        if only_oracles is not None and f.oracle not in only_oracles:
            continue
        if f.known is not None and not include_known:
            stats.known[f.known] += 1
            stats.hits.setdefault(f.known, "known")
        elif already_found is not None and already_found(f):
            stats.already_found[f.oracle] += 1
            stats.hits.setdefault(findings.finding_id(findings.signature(f)), "filed before")
        else:
            unknown.append(f)
            stats.hits.setdefault(findings.finding_id(findings.signature(f)), "new")
    if unknown:
        raise unknown[0]
    for why, again, on_paths in reruns(case, report, unmask=unmask, project=project):
        setattr(stats, why, getattr(stats, why) + 1)
        check_property(again, stats, include_known, on_paths=on_paths,
                       only_oracles=only_oracles, already_found=already_found,
                       unsupported_are_findings=unsupported_are_findings)
    return report


# The oracles that compare runs, and count the cases they compared
# (`CaseReport.count`); the others judge each path's run as it ends.
_COMPARING = frozenset(cls.oracle for cls in oracles.ORACLES
                       if cls.compare.__func__ is not oracles.OracleFailure.compare.__func__)


def count_triggers(case, stats: Stats, ids) -> None:
    """Count, in ``stats.triggers``, the known findings of ``ids`` whose
    trigger ``case`` has, and whether what would show each reached the case
    (it or its reruns, as ``stats`` counted them): a path it shows on ran,
    and a comparing oracle among its symptoms compared. A benchmark's
    readout (`fuzz.bench_campaign`): a bug missed with its trigger drawn
    and reached is wider than the bug; drawn but not reached, the schedule
    or a refusal kept it from its oracle; not drawn, the generator."""
    ran = {p for p, n in stats.cases.items() if n and p != "case"}
    for fid in ids:
        k = known_findings.BY_ID[fid]
        if not known_findings.with_trigger(k, case):
            continue
        shown = ran & set(k.paths) if k.paths else ran
        compared = not k.symptoms or any(o not in _COMPARING or stats.compared.get(o)
                                         for o, _ in k.symptoms)
        seen = stats.triggers.setdefault(fid, [0, 0])
        seen[0] += 1
        seen[1] += bool(shown) and compared


def reruns(case, report, *, unmask: bool, project: bool):
    """What ``case`` runs again after its ``report``, each as (`Stats`
    counter, case, paths): with ``unmask``, without the triggers of the
    known crashes that stopped paths, on those paths only (the others ran
    the whole program; run everywhere, a case cost a fifth more), and
    without the statements of the unsupported refusals that stopped paths
    (a transposed view), on those; with
    ``project``, on each path it refused, as that path can run it (once
    on the paths that keep the same: the TPU interpreter's two options)."""
    if unmask and (behind := known_findings.unmasked(case, report.failures)) is not None:
        yield "unmasked", behind, known_findings.stopped(report.failures)
    if unmask and (refused := unsupported.unmasked(case, report.unsupported)) is not None:
        yield "unmasked", *refused
    projections = {}
    for path in report.skipped if project else ():
        if (kept := paths.projected(case, path)) is not None:
            projections.setdefault(kept, []).append(path)
    for kept, on_paths in projections.items():
        yield "projected", kept, tuple(on_paths)


# Each of `STRATEGIES`' strategy of cases, by name.
STRATEGY_MAKERS = {"valid": programs, "invalid": invalid_programs, "swarm": swarm_programs,
                   "refs": ref_programs, "plain": plain_programs, "copies": copy_programs}
assert set(STRATEGY_MAKERS) == set(STRATEGIES), "a strategy named in fuzz.campaign has no maker"

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def campaign_test(body, strategy_names, *, database, max_examples: int, phases):
    """The Hypothesis test a campaign worker runs, in both of its modes:
    ``body(case)`` over valid, invalid and/or swarm programs (``strategy_names``:
    `STRATEGIES`).
    One test, so Hypothesis and atheris share its database entries."""

    @settings(max_examples=max_examples, deadline=None, database=database,
              report_multiple_bugs=True, print_blob=False, phases=phases,
              suppress_health_check=_SLOW_OK)
    @given(st.one_of(*[STRATEGY_MAKERS[name]() for name in strategy_names]))
    def campaign(case):
        body(case)
    return campaign


def run_campaign(strategy, *, max_examples: int, seed: int | None = None,
                 include_known=False, database=None, only_oracles=None) -> Stats:
    """Run ``strategy``'s cases through `check_property` with Hypothesis
    (the oracles named ``only_oracles``, default all); every distinct
    failure comes back shrunk, with its case attached."""
    stats = Stats()

    @settings(max_examples=max_examples, deadline=None, database=database,
              report_multiple_bugs=True, print_blob=False,
              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
              suppress_health_check=_SLOW_OK)
    @given(strategy)
    def prop(case):
        check_property(case, stats, include_known, only_oracles=only_oracles)

    if seed is not None:
        prop = hseed(seed)(prop)
    start = time.perf_counter()
    try:
        prop()
    except BaseException as e:  # noqa: BLE001 - sorted below
        if isinstance(e, KeyboardInterrupt):
            raise
        for leaf in leaves(e):
            (stats.failures if isinstance(leaf, oracles.OracleFailure)
             else stats.errors).append(leaf)
    stats.seconds = time.perf_counter() - start
    return stats


def leaves(e: BaseException):
    """The single exceptions in ``e`` (Hypothesis groups distinct bugs)."""
    if isinstance(e, BaseExceptionGroup):
        for sub in e.exceptions:
            yield from leaves(sub)
    else:
        yield e


REPLAY = (Phase.explicit, Phase.reuse)


def replay_database(test, on_failure):
    """Run ``test`` (made with ``phases=REPLAY``: its example database's saved
    failures only); hand each failure to ``on_failure``, raise anything else."""
    try:
        test()
    except unittest.SkipTest:
        pass   # nothing saved to replay
    except BaseException as e:  # noqa: BLE001 - sorted below
        for leaf in leaves(e):
            if not isinstance(leaf, oracles.OracleFailure):
                raise leaf
            on_failure(leaf)


def filed_signatures(corpus_dir, on_warning) -> set[str]:
    """The signatures of the findings filed in the corpus already."""
    filed = set()
    for path in corpus.files(corpus_dir, "regression"):
        try:
            filed.add(corpus.load(path).signature)
        except corpus.CorpusError as e:
            on_warning(str(e))
    return filed


def replay_corpus(corpus_dir, run, *, on_failure, on_fixed, on_warning, start=0,
                  on_entry=lambda n: None):
    """Known failures first: ``run(case)`` each corpus regression, then each
    seed. A failure goes to ``on_failure``; a regression whose signature no
    longer shows goes to ``on_fixed(entry)``; a bad file to ``on_warning``.
    ``on_entry(n)`` hears of the n-th file before it runs, and ``start``
    skips the files before it: a worker that died replaying one hands the
    rest to the next."""
    files = [(kind, path) for kind in ("regression", "seed") for path in corpus.files(corpus_dir, kind)]
    for n, (kind, path) in enumerate(files[start:], start):
        on_entry(n)
        try:
            entry = corpus.load(path)
        except corpus.CorpusError as e:
            on_warning(str(e))
            continue
        if entry.meta.get("oracle") == "crash":
            continue   # it would kill the process again; it stays filed as it is
        try:
            report = run(entry.case)
        except oracles.OracleFailure as f:
            on_failure(f)
            continue
        if kind == "regression" and not any(
                findings.signature(f) == entry.signature for f in report.failures):
            on_fixed(entry)

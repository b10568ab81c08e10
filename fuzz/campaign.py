"""The property every test and the main job run, and a campaign around it.

`check_property(case)` runs a case through all its paths and oracles and
raises the first failure that is not a known finding; known findings are
counted instead. `run_campaign` hands it to Hypothesis for a number of
examples and collects every distinct (shrunk) failure.
"""
from __future__ import annotations

import collections
import time
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

from fuzz import known_findings, oracles


@dataclass
class Stats:
    cases: collections.Counter = field(default_factory=collections.Counter)
    skipped: collections.Counter = field(default_factory=collections.Counter)
    known: collections.Counter = field(default_factory=collections.Counter)
    failures: list[oracles.OracleFailure] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return self.cases["case"]


# Counts for the pytest session summary (tests/conftest.py prints it).
SESSION = Stats()


def check_property(case, stats: Stats = SESSION, include_known=False) -> oracles.CaseReport:
    """Run ``case`` everywhere; raise its first unknown failure."""
    report = oracles.check(case)
    stats.cases["case"] += 1
    for o in report.outcomes:
        stats.cases[o.path] += 1
    for path in report.skipped:
        stats.skipped[path] += 1
    unknown = []
    for f in report.failures:
        k = known_findings.match(f, report.failures)
        if k is not None and not include_known:
            stats.known[k.id] += 1
        else:
            unknown.append(f)
    if unknown:
        raise unknown[0]
    return report


def run_campaign(strategy, *, max_examples: int, seed: int | None = None,
                 include_known=False, database=None) -> Stats:
    """Run ``strategy``'s cases through `check_property` with Hypothesis;
    every distinct failure comes back shrunk, with its case attached."""
    stats = Stats()

    @settings(max_examples=max_examples, deadline=None, database=database,
              report_multiple_bugs=True, print_blob=False,
              phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(strategy)
    def prop(case):
        check_property(case, stats, include_known)

    if seed is not None:
        prop = hseed(seed)(prop)
    start = time.perf_counter()
    try:
        prop()
    except BaseException as e:  # noqa: BLE001 - sorted below
        if isinstance(e, KeyboardInterrupt):
            raise
        for leaf in _leaves(e):
            (stats.failures if isinstance(leaf, oracles.OracleFailure)
             else stats.errors).append(leaf)
    stats.seconds = time.perf_counter() - start
    return stats


def _leaves(e: BaseException):
    if isinstance(e, BaseExceptionGroup):
        for sub in e.exceptions:
            yield from _leaves(sub)
    else:
        yield e

"""``path-vs-path``: the paths that ran a valid program without error agree
on what each of them shows: reads, final data refs, and the count the TPU
interpreter reports left over at exit against the counts another path ends
with. (A path under other options against itself: interpret-options.)"""
from __future__ import annotations

from fuzz import paths
from fuzz.oracles.base import OracleFailure, chained, comparable, groups, leftover_differs


class PathMismatch(OracleFailure):
    """Two paths disagree on the same case."""
    oracle = "path-vs-path"
    summary = "two ways of running the same program give different results: {message}"
    wrong_value = True
    RANK, COST = 2.2, 0

    @classmethod
    def applies(cls, report):
        return comparable(report)

    @classmethod
    def compare(cls, report):
        """Each path's run against the next path's, and every count left
        over at exit against another path's counts."""
        case, fine = report.case, report.fine
        found = chained(cls, case, [g[0] for g in groups(report)])
        found += [f for a in fine for b in fine
                  if paths.variant_of(a.path) != paths.variant_of(b.path)
                  for f in leftover_differs(cls, case, a, b)]
        report.count(cls.oracle, len(fine) > 1)
        return found

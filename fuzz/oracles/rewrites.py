"""Rewrites that must not change what a program means, each run on the same
path as the program as written (``RERUN`` paths, whose runs show every
value): ``chain-equivalence`` re-expresses every view as one static index
of the same element (`elements.canonical`); ``control-unrolled`` replaces
every loop and cond by the blocks it runs (`model.unrolled`): each
control-flow discharge rule against none."""
from __future__ import annotations

from fuzz import elements, emit, ir, model, paths
from fuzz.oracles import tiers
from fuzz.oracles.base import OracleFailure, describe, observed, side_by_side


def _known_failure(case: ir.Case, path: str) -> bool:
    """Whether ``case`` fails on ``path`` with a known finding only."""
    failures = tiers.check(case, on_paths=(path,), oracles=("valid-runs",)).failures
    return bool(failures) and all(f.known for f in failures)


class _Rewrite(OracleFailure):
    """The program against `rewrite` of it, run on the same path."""
    wrong_value = True
    COST = 1
    NAME, WHEN = "", ""   # what the rewrite is called; how a message says what it did

    @staticmethod
    def rewrite(case: ir.Case) -> ir.Case | None:
        raise NotImplementedError

    @classmethod
    def compare(cls, report):
        found = []
        for o in (o for o in report.fine if paths.fact(o.path, "RERUN")):
            found += cls.against_rewrite(report.case, o)
            report.count(cls.oracle)
        return found

    @classmethod
    def against_rewrite(cls, case: ir.Case, outcome: paths.Outcome) -> list[OracleFailure]:
        """``outcome`` against the same path's run of the rewrite (None, or
        ``case`` itself: nothing to compare)."""
        other = cls.rewrite(case)
        if other is None or other == case:
            return []
        again = paths.run(other, outcome.path)
        if again.error is None and observed(again) == observed(outcome):
            return []
        if again.error is not None and _known_failure(other, outcome.path):
            # The rewrite has a statement a known bug breaks (an unrolled
            # step's slice as a static index, say), which the program as
            # written has not: there is nothing to compare.
            return []
        name = cls.NAME
        what = (f"the {name} program raised " + paths.first_line(again.error)
                if again.error is not None else "results differ")
        shape = (f"{name} raised {type(again.error).__name__}" if again.error is not None
                 else "results differ")
        return [cls.fail(case, "?", outcome.path, f"{what} {cls.WHEN}",
                         side_by_side(case, [("reads, state", observed(outcome),
                                              observed(again) if again.error is None
                                              else describe(again))],
                                      "as written", name) +
                         f"\n{name} program:\n{emit.kernel_source(other)}", shape=shape)]


class ChainMismatch(_Rewrite):
    """A program differs from itself with every view re-expressed as one index."""
    oracle = "chain-equivalence"
    summary = ("the program gives another result with each chained view (x.at[a].at[b]) "
               "written as the one index it names: {message}")
    RANK = 3.1
    NAME, WHEN = "re-indexed", "when every view is one static index"
    rewrite = staticmethod(elements.canonical)

    @classmethod
    def applies(cls, report):
        case = report.case
        if any(elements.names_twice(case.refs, v) for s in ir.flat(case.body) if not s.reads_only
               for v in ir.views(s)):
            # Its write-back is one scatter, and which duplicate wins JAX does
            # not say; re-indexed, the view names the element once.
            return "a statement writes through a view that names one element twice"
        return None


class UnrolledMismatch(_Rewrite):
    """A program with loops or conds differs from itself unrolled."""
    oracle = "control-unrolled"
    summary = "the program gives another result with its loops and conds unrolled: {message}"
    RANK = 3.2
    NAME, WHEN = "unrolled", "when every loop and cond is unrolled"
    rewrite = staticmethod(model.unrolled)

    @classmethod
    def applies(cls, report):
        if not any(s.block_fields for s in report.case.body):
            return "no loop or cond to unroll"
        return None

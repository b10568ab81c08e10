"""``discharge-composes``: discharge is compositional and idempotent.
Discharging some refs of the traced kernel (``should_discharge``), then the
rest from the result, must give the program that discharging them all at
once gives: the same result avals and, run from the same initial contents,
the same values; and discharging a program that has no refs left changes
nothing. It discharges the kernel as the path that only traces it
(``abstract``) traced it, with that path's own ``discharge``. A partial
discharge that raises is the partial-discharge oracle's to report."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from fuzz import compat, model, paths
from fuzz.oracles.base import (OracleFailure, nan_same, not_partly_dischargeable,
                               side_by_side, traced)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal in shape, dtype and elements, a NaN equal to a NaN (`nan_same`)."""
    return a.shape == b.shape and a.dtype == b.dtype and nan_same(a) == nan_same(b)


def _first_step(refs: list[int]) -> list[bool]:
    """Which inputs the first discharge takes: ``dyn``, ``out`` and every
    other ref (the rest are left for the second)."""
    return [True, True, *[k % 2 == 0 for k in range(len(refs))]]


class CompositionMismatch(OracleFailure):
    """Discharging in two steps differs from discharging at once."""
    oracle = "discharge-composes"
    stage = "discharge"
    RANK, COST = 3.6, 3
    RULES = "partial discharge"
    summary = ("discharging some refs, then the rest, does not give what discharging "
               "them all at once gives: {message}")

    @classmethod
    def applies(cls, report):
        if why := not_partly_dischargeable(report):
            return why
        if len(paths.unscoped(report.case)) < 2:
            return "one ref or none: there is no second step"
        return None

    @classmethod
    def compare(cls, report):
        report.count(cls.oracle)
        case, run = report.case, traced(report)
        refs = paths.unscoped(case)
        discharge = paths.load(case, run.path)["discharge"]
        names = ["dyn", "out", *[f"r{i}" for i in refs]]
        inits = [jnp.asarray(paths.dyn(case)), jnp.zeros((paths.out_len(case),), jnp.int32),
                 *[jnp.asarray(model.initial(case, i)) for i in refs]]
        first = _first_step(refs)
        try:
            at_once = discharge(run.jaxpr)
            want = [np.asarray(v) for v in compat.eval_closed(at_once, *inits)]
            halfway = discharge(run.jaxpr, should_discharge=first)
        except Exception as e:  # noqa: BLE001 - the path's, or partial-discharge's, to report
            report.not_applied[cls.oracle] = f"discharging it raises {paths.first_line(e)}"
            return []
        # A discharged input's final value is an output, in input order: the
        # second step's outputs are the first step's refs, then the rest.
        stepwise = [k for k, d in enumerate(first) if d] + [k for k, d in enumerate(first) if not d]
        found = []
        for again, how, order in ((lambda: discharge(halfway), "in two steps", stepwise),
                                  (lambda: discharge(at_once), "twice", range(len(names)))):
            try:
                other = again()
                avals = [str(a) for a in other.out_avals]
                if avals != [str(at_once.out_avals[k]) for k in order]:
                    found.append(cls.fail(
                        case, "?", run.path,
                        f"discharged {how}, the results' avals differ from discharging at once",
                        side_by_side(case, [("avals", [str(at_once.out_avals[k]) for k in order],
                                             avals)], "at once", how),
                        shape=f"{how}|avals differ"))
                    continue
                got = [np.asarray(v) for v in compat.eval_closed(other, *inits)]
            except Exception as e:  # noqa: BLE001 - a discharge that raises is a finding
                found.append(cls.fail(case, "?", run.path,
                                      f"discharged {how}, it raises {paths.first_line(e)}", "",
                                      shape=f"{how}|raised {type(e).__name__}"))
                continue
            rows = [(names[k], want[k].tolist(), g.tolist()) for k, g in zip(order, got)]
            bad = [n for (n, _, _), k, g in zip(rows, order, got) if not _same(want[k], g)]
            if bad:
                found.append(cls.fail(case, "?", run.path,
                                      f"discharged {how}, final {bad[0]} differs from "
                                      "discharging at once",
                                      side_by_side(case, rows, "at once", how),
                                      shape=f"{how}|values differ"))
        return found

"""``partial-discharge``: discharging all refs but one (``should_discharge``)
leaves that one a ref, untouched, and, with it run as a ``jax.new_ref``, the
program ends as the full discharge does. It discharges the kernel as the
path that only traces (``EVALUATES`` False: ``abstract``) traced it, with
that path's own ``discharge``."""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from fuzz import compat, ir, model, paths
from fuzz.oracles.base import OracleFailure, not_partly_dischargeable, side_by_side, traced


def kept(case: ir.Case) -> int | None:
    """The ref left undischarged: the first unscoped data ref in use, in the
    default memory space. A ref in VMEM or SMEM cannot run outside a kernel
    as it is typed: passed in as a plain jax.new_ref, the values the jaxpr
    types ``bool<vmem>[]`` meet plain ``bool[]`` ones (a loop's carry
    refuses them); made in its memory space inside the jit, any masked
    store to it fails to lower on CPU ('Primitive pad got aval
    uint32<vmem>[] with unknown memory_space type'). Both are of the
    oracle's making, not JAX's."""
    data = sorted(i for i in model.data_refs(case) & set(paths.unscoped(case))
                  if case.refs[i].memory_space is None)
    return data[0] if data else None


class PartialDischargeMismatch(OracleFailure):
    """Discharging some refs differs from discharging all of them."""
    oracle = "partial-discharge"
    stage = "discharge"
    RANK, COST = 3.5, 2
    summary = ("discharging all refs but one (`should_discharge`) does not agree with "
               "discharging them all: {message}")

    @classmethod
    def applies(cls, report):
        # (it runs the kept ref as a jax.new_ref)
        if why := compat.lacking(["jax.new_ref"]) or not_partly_dischargeable(report):
            return why
        if kept(report.case) is None:
            return "no unscoped ref in the default memory space that only data statements use"
        return None

    @classmethod
    def compare(cls, report):
        report.count(cls.oracle)
        run = traced(report)
        try:
            return cls.partial_discharge(report.case, run)
        except Exception as e:  # noqa: BLE001 - a partial discharge that raises is a finding
            return [cls.fail(report.case, "?", run.path,
                             f"partial discharge raised {paths.first_line(e)}", "",
                             shape=f"raised {type(e).__name__}")]

    @classmethod
    def partial_discharge(cls, case: ir.Case, run: paths.Outcome) -> list[OracleFailure]:
        """Full discharge against discharge of every ref but `kept`'s, run
        from the same initial contents."""
        keep = kept(case)
        refs = paths.unscoped(case)
        closed, discharge = run.jaxpr, paths.load(case, run.path)["discharge"]
        mask = [True, True, *[i != keep for i in refs]]
        inits = [jnp.asarray(paths.dyn(case)), jnp.zeros((paths.out_len(case),), jnp.int32),
                 *[jnp.asarray(model.initial(case, i)) for i in refs]]
        full = discharge(closed)
        partial = discharge(closed, should_discharge=mask)
        k = 2 + refs.index(keep)
        name = f"r{keep}"
        if not isinstance(partial.in_avals[k], type(closed.in_avals[k])):
            return [cls.fail(case, "?", run.path,
                             f"{name}, left undischarged, became {partial.in_avals[k]}",
                             side_by_side(case, [(name, str(closed.in_avals[k]),
                                                  str(partial.in_avals[k]))],
                                          "declared", "after partial discharge"),
                             shape="kept ref discharged")]
        want = compat.eval_closed(full, *inits)
        ref = jax.new_ref(inits[k])
        # Under jit: Pallas' masked loads and stores have no eager rule on a Ref.
        got = list(jax.jit(functools.partial(compat.eval_closed, partial))(
            *inits[:k], ref, *inits[k + 1:]))
        got.insert(k, ref[...])
        rows = [(n, np.asarray(a).tolist(), np.asarray(b).tolist())
                for n, a, b in zip(("dyn", "out", *[f"r{i}" for i in refs]), want, got)]
        if all(a == b for _, a, b in rows):
            return []
        bad = next(n for n, a, b in rows if a != b)
        return [cls.fail(case, "?", run.path,
                         f"final {bad} differs between full and partial discharge ({name} kept)",
                         side_by_side(case, rows, "full", f"all but {name}"),
                         shape=f"final {'kept' if bad == name else 'discharged'} ref differs")]

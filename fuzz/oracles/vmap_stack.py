"""``vmap-stack``: ``jax.vmap`` of a path's program (``VMAP``: the
``pallas_call``, and, under ``jax.jit``, the ``eager`` path's
``jax.new_ref`` program: the batching rules of the ref primitives, then
discharge), two levels deep, against its calls one by one. ``dyn`` differs
across the batch, so dynamic indices, values, trip counts and branches do;
some operands are batched, some not (the path's ``vmap_batches``).
(``pl.run_state`` has no batching rule; the jax_refs program's
``jax.empty_ref`` refuses even an unbatched write under vmap.)"""
from __future__ import annotations

import dataclasses
import itertools

import jax
import jax.numpy as jnp
import numpy as np

from fuzz import ir, model, paths
from fuzz.oracles.base import OracleFailure, refused, same, show, side_by_side

# vmap of vmap: the inner level's batching rules are those of one vmap, the
# outer batches their output (it costs about 5% more than one level).
LEVELS = 2


def bumped(case: ir.Case) -> ir.Case:
    """``case`` with other dynamic amounts (each op's ``vary``): the same
    kernel and views, other values."""
    return dataclasses.replace(case, body=tuple(s.vary() for s in case.body))


def _ends_at_zero(case: ir.Case) -> bool:
    """Every count back at 0 (data refs may hold anything)."""
    meaning = model.evaluate(case)
    data = model.data_refs(case)
    return meaning.undefined is None and not any(
        np.any(np.asarray(s, dtype=object) != 0)
        for i, s in enumerate(meaning.state) if i not in data)


def vmap_axes(path: str, leaves, results):
    """How vmap-stack batches ``path``'s program, per level (innermost
    first): the ``in_axes`` of each argument leaf (None for unbatched ones,
    the path's ``vmap_batches``) and the ``out_axes`` of each result
    (anything with a ``shape``), each some axis the leaf or result has at
    that level. They follow from position and rank only, so a case batches
    the same way each time it runs, and as it is minimized."""
    batches = paths.MODULES[path].vmap_batches
    batched = [True, *(batches(k) for k in range(len(leaves) - 1))]
    ins = [[(k + level) % (np.ndim(x) + level + 1) if b else None
            for k, (x, b) in enumerate(zip(leaves, batched))] for level in range(LEVELS)]
    outs = [tuple((j + level) % (len(r.shape) + level + 1) for j, r in enumerate(results))
            for level in range(LEVELS)]
    return ins, outs


def _plus_one(x):
    x = np.asarray(x)
    return np.logical_not(x) if x.dtype == bool else x + np.asarray(1, x.dtype)


def _element_inputs(leaves, other, batched, at, with_counts: bool) -> list:
    """The argument leaves of batch element ``at`` (outer index first):
    ``dyn`` is ``other`` (`bumped`'s) where every index is 1, the case's
    elsewhere, so a mix-up along either level or both shows (with two
    values, one that alternates along each level would hide a mix-up along
    both); the outer level also varies the batched data operands (each
    element + 1, a bool negated), except where the kernel has semaphores,
    whose counts data may feed and which must end at 0."""
    dyn = other if all(at) else leaves[0]
    if with_counts or not at[0]:
        return [dyn, *leaves[1:]]
    return [dyn, *(_plus_one(x) if b else x for x, b in zip(leaves[1:], batched[1:]))]


def _element(result, at, axes):
    """The batch element ``at`` (outer index first) of a vmapped ``result``
    whose batch axis is ``axes[level]`` at each level (innermost first)."""
    x = np.asarray(result)
    for level, b in zip(reversed(range(len(at))), at):
        x = np.moveaxis(x, axes[level], 0)[b]
    return x


class VmapMismatch(OracleFailure):
    """vmap of a program (pallas_call, the eager new_ref program) differs from
    its calls one by one."""
    oracle = "vmap-stack"
    RANK, COST = 3.4, 5   # 4 calls one by one, then the batched one

    @classmethod
    def applies(cls, report):
        """Scratch semaphores live across the grid steps vmap adds, on
        hardware as in the interpreter, so only kernels that leave every
        count at 0 (as Pallas requires) must batch like separate calls."""
        case = report.case
        if case.devices is not None:
            return "a program on a mesh is not batched here (its copies and signals cross devices)"
        if not (_ends_at_zero(case) and _ends_at_zero(bumped(case))):
            return "the kernel leaves a semaphore count non-zero (or blocks)"
        return None

    @classmethod
    def compare(cls, report):
        found = []
        for o in (o for o in report.fine if paths.fact(o.path, "VMAP")):
            if reason := refused(report.case, "vmap", o.path):
                report.not_applied[cls.oracle] = reason
                continue
            found += cls.vmap_vs_stack(report.case, o.path)
            report.count(cls.oracle)
        return found

    @classmethod
    def vmap_vs_stack(cls, case: ir.Case, path: str) -> list[OracleFailure]:
        """``jax.vmap`` of ``path``'s program, `LEVELS` deep with the axes
        `vmap_axes` gives, against the calls one by one. ``dyn`` is the
        first leaf of the program's arguments."""
        call, args = paths.load(case, path)["function"]()
        leaves, tree = jax.tree_util.tree_flatten(args)
        with_counts = bool(model.counts_refs(case))
        try:
            ins, outs = vmap_axes(path, leaves, jax.eval_shape(call, *args))
            points = list(itertools.product(range(2), repeat=LEVELS))   # (outer, ..., inner)
            other = jnp.asarray(paths.dyn(bumped(case)))
            inputs = {at: _element_inputs(leaves, other, [a is not None for a in ins[0]], at,
                                          with_counts) for at in points}
            one_by_one = {at: [np.asarray(r) for r in call(*jax.tree_util.tree_unflatten(tree, x))]
                          for at, x in inputs.items()}
        except Exception:  # noqa: BLE001 - the path itself reports it
            return []

        def stacked(k, at=(), level=LEVELS - 1):
            """Leaf ``k`` as the batch elements under ``at`` (outer index
            first) see it, stacked along its axis at each level up to ``level``."""
            if level < 0:
                return inputs[at][k]
            if ins[level][k] is None:   # unbatched at every level
                return leaves[k]
            return np.stack([stacked(k, (*at, b), level - 1) for b in range(2)],
                            axis=ins[level][k])

        batched_call = call
        for level in range(LEVELS):
            batched_call = jax.vmap(batched_call,
                                    in_axes=jax.tree_util.tree_unflatten(tree, ins[level]),
                                    out_axes=outs[level])
        how = f"vmap {LEVELS} levels deep, in_axes {ins}, out_axes {outs} (innermost first)"
        try:
            results = jax.jit(batched_call)(
                *jax.tree_util.tree_unflatten(tree, [stacked(k) for k in range(len(leaves))]))
        except Exception as e:  # noqa: BLE001
            return [cls.fail(case, "?", path, f"vmap raised {paths.first_line(e)}",
                             side_by_side(case, [("results",
                                                  [show(r) for r in one_by_one.values()],
                                                  "raised")], "one by one", "vmap") + f"\n{how}",
                             shape=f"raised {type(e).__name__}", raised=type(e).__name__)]
        expected = [one_by_one[at] for at in points]
        try:
            batched = [[_element(r, at, [o[j] for o in outs]) for j, r in enumerate(results)]
                       for at in points]
        except (np.exceptions.AxisError, IndexError):
            # A result without the batch axes vmap promised: compared whole.
            batched = [[np.asarray(r) for r in results]] * len(points)
        if all(same(b, o) for b, o in zip(batched, expected)):
            return []
        return [cls.fail(case, "?", path, "vmap result differs from the calls one by one",
                         side_by_side(case, [("results", [show(r) for r in expected],
                                              [show(r) for r in batched])],
                                      "one by one", "vmap") + f"\n{how}",
                         shape="results differ")]

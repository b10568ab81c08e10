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
from fuzz.oracles.base import Comparison, OracleFailure, literal, refused, side_by_side

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


# What vmap-stack runs, after the constants `VmapMismatch.comparison` writes.
_SOURCE = """
def expected():
    \"\"\"The calls one by one, at each batch element of POINTS.\"\"\"
    f, args = function()
    tree = jax.tree_util.tree_structure(args)
    return [[np.asarray(r).tolist() for r in f(*jax.tree_util.tree_unflatten(tree, x))]
            for x in ELEMENTS]


def actual():
    \"\"\"The vmapped call on ELEMENTS stacked, each of POINTS taken back out.\"\"\"
    # (stacked along IN_AXES, an operand batched at no level passed as it is;
    # taken out along OUT_AXES)
    f, args = function()
    leaves, tree = jax.tree_util.tree_flatten(args)
    g = f
    for ins, outs in zip(IN_AXES, OUT_AXES):
        g = jax.vmap(g, in_axes=jax.tree_util.tree_unflatten(tree, ins), out_axes=outs)

    def stacked(k, at=(), level=len(IN_AXES) - 1):
        if level < 0:
            return ELEMENTS[POINTS.index(at)][k]
        if IN_AXES[level][k] is None:
            return leaves[k]
        return np.stack([stacked(k, (*at, b), level - 1) for b in range(2)],
                        axis=IN_AXES[level][k])
    results = jax.jit(g)(*jax.tree_util.tree_unflatten(
        tree, [stacked(k) for k in range(len(leaves))]))

    def element(r, at, axes):
        x = np.asarray(r)
        try:
            for level, b in zip(reversed(range(len(at))), at):
                x = np.moveaxis(x, axes[level], 0)[b]
        except (np.exceptions.AxisError, IndexError):
            return np.asarray(r).tolist()   # without the batch axes vmap promised: whole
        return x.tolist()
    return [[element(r, at, [o[j] for o in OUT_AXES]) for j, r in enumerate(results)]
            for at in POINTS]
"""


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
    def comparison(cls, case: ir.Case, path: str):
        """``jax.vmap`` of ``path``'s program, `LEVELS` deep with the axes
        `vmap_axes` gives, against its calls one by one. Batch elements
        differ (`_element_inputs`) so that mixing them up shows; some
        operands are batched, some not (the path's ``vmap_batches``).
        ``dyn`` is the first leaf of the program's arguments."""
        if not paths.fact(path, "VMAP"):
            return None
        return cls._comparison(case, path, paths.load(case, path))

    @classmethod
    def _comparison(cls, case: ir.Case, path: str, program: dict) -> Comparison:
        """`comparison`, of ``program`` (``path``'s namespace, loaded once)."""
        call, args = program["function"]()
        leaves = jax.tree_util.tree_leaves(args)
        ins, outs = vmap_axes(path, leaves, jax.eval_shape(call, *args))
        points = list(itertools.product(range(2), repeat=LEVELS))   # (outer, ..., inner)
        other = jnp.asarray(paths.dyn(bumped(case)))
        elements = [_element_inputs(leaves, other, [a is not None for a in ins[0]], at,
                                    bool(model.counts_refs(case))) for at in points]
        constants = (
            f"IN_AXES = {ins!r}  # per vmap level, innermost first: each argument leaf's\n"
            f"OUT_AXES = {outs!r}  # per level: each result's\n"
            f"POINTS = {points!r}  # the batch elements, (outer, inner)\n"
            "ELEMENTS = [  # each batch element's argument leaves\n" +
            "".join(f"    [{', '.join(literal(x) for x in xs)}],\n" for xs in elements) + "]\n")
        return Comparison(constants + _SOURCE, "the calls one by one",
                          f"jax.vmap ({LEVELS} levels)")

    @classmethod
    def vmap_vs_stack(cls, case: ir.Case, path: str = "pallas_call") -> list[OracleFailure]:
        """`comparison` run: the vmapped call against the calls one by one."""
        try:
            program = paths.load(case, path)
            comparison = cls._comparison(case, path, program)
            ran = comparison.run(program)
            expected = ran["expected"]()
        except Exception:  # noqa: BLE001 - the path itself reports it
            return []
        how = comparison.source.split("\nPOINTS")[0]
        try:
            batched = ran["actual"]()
        except Exception as e:  # noqa: BLE001
            return [cls.fail(case, "?", path, f"vmap raised {paths.first_line(e)}",
                             side_by_side(case, [("results", expected, "raised")],
                                          "one by one", "vmap") + f"\n{how}",
                             shape=f"raised {type(e).__name__}", raised=type(e).__name__)]
        if batched == expected:
            return []
        return [cls.fail(case, "?", path, "vmap result differs from the calls one by one",
                         side_by_side(case, [("results", expected, batched)],
                                      "one by one", "vmap") + f"\n{how}",
                         shape="results differ")]

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
from fuzz.oracles.base import Comparison, OracleFailure, literal, nan_same, refused, side_by_side

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


def _batch_axes(axes) -> tuple[int, ...]:
    """Where the batch axes of vmap's levels (``axes``: each level's, innermost
    first) end up in the array they batch, outermost first."""
    at: list[int] = []
    for a in axes:
        at = [p + (p >= a) for p in at] + [a]
    return tuple(reversed(at))


class VmapMismatch(OracleFailure):
    """vmap of a program (pallas_call, the eager new_ref program) differs from
    its calls one by one."""
    oracle = "vmap-stack"
    summary = ("`jax.vmap` of the program differs from calling it on each element and "
               "stacking the results: {message}")
    # The calls one by one under jax.jit share one compile (eagerly, each
    # call cost as much), then the batched call: 0.59 of the time the eager
    # calls took (docs/measurements.md, "vmap-stack under jit"), so 5 -> 3.
    RANK, COST = 3.4, 3
    RULES = "batching"

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
        operands are batched, some not (the path's ``vmap_batches``). Both
        sides run under ``jax.jit``, so only vmap differs between them.
        ``dyn`` is the first leaf of the program's arguments."""
        if not paths.fact(path, "VMAP"):
            return None
        return cls._comparison(case, path, paths.load(case, path))

    @classmethod
    def _comparison(cls, case: ir.Case, path: str, program: dict) -> Comparison:
        """`comparison`, of ``program`` (``path``'s namespace, loaded once):
        the program as ``f`` of its batched operands (less ``dyn`` where the
        kernel reads none) to its results (less ``out`` where it holds no
        read), each side's results with their batch axes first, outermost first."""
        call, args = program["function"]()
        leaves = jax.tree_util.tree_leaves(args)
        results = [n for n, _ in paths.MODULES[path].results(case)]
        ins, outs = vmap_axes(path, leaves, jax.eval_shape(call, *args))
        batched = [k for k, a in enumerate(ins[0]) if a is not None]
        params = [k for k in batched if k or case.dynamic_values or batched == [0]]
        kept = [j for j, n in enumerate(results) if n != "out" or case.num_reads]
        points = list(itertools.product(range(2), repeat=LEVELS))   # (outer, ..., inner)
        other = jnp.asarray(paths.dyn(bumped(case)))
        elements = [_element_inputs(leaves, other, [a is not None for a in ins[0]], at,
                                    bool(model.counts_refs(case))) for at in points]

        def stacked(k, at=()):   # leaf k of the batch elements under ``at``, stacked
            if len(at) == LEVELS:
                return elements[points.index(at)][k]
            return np.stack([stacked(k, (*at, b)) for b in range(2)],
                            axis=ins[LEVELS - 1 - len(at)][k])
        source, _ = paths.function_source(case, path, params, kept)
        in_at = tuple(_batch_axes([a[k] for a in ins]) for k in params)
        out_at = tuple(_batch_axes([o[j] for o in outs]) for j in kept)
        # Each level but the outermost named g, the outermost called under jax.jit.
        vmap = [f"jax.vmap({'f' if level == 0 else 'g'}, "
                f"in_axes={tuple(ins[level][k] for k in params)!r}, "
                f"out_axes={tuple(outs[level][j] for j in kept)!r})" for level in range(LEVELS)]
        first, batch = tuple(range(LEVELS)), ", ".join(["2"] * LEVELS)
        source += (
            f"ARGS = ({paths.tuple_source(literal(stacked(k)) for k in params)})"
            "  # f's operands, batch elements stacked\n"
            "\n\ndef expected():   # jax.jit(f) on each batch element, its results stacked\n"
            f"    return [np.stack(rs).reshape({batch}, *np.shape(rs[0])).tolist() for rs in zip(*["
            f"jax.jit(f)(*(np.moveaxis(x, a, {first!r})[b] for x, a in zip(ARGS, {in_at!r}))) "
            f"for b in np.ndindex({batch})])]\n"
            "\n\ndef actual():   # jax.vmap of f, its results' batch axes moved first\n"
            + "".join(f"    g = {v}\n" for v in vmap[:-1])
            + f"    return [np.moveaxis(r, a, {first!r}).tolist() for r, a in zip("
            f"jax.jit({vmap[-1]})(*ARGS), {out_at!r})]\n")
        return Comparison(source, "the calls one by one",
                          f"jax.vmap ({LEVELS} level{'s' * (LEVELS > 1)})")

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
        how = comparison.source[comparison.source.index("def actual"):]
        try:
            batched = ran["actual"]()
        except Exception as e:  # noqa: BLE001
            return [cls.fail(case, "?", path, f"vmap raised {paths.first_line(e)}",
                             side_by_side(case, [("results", expected, "raised")],
                                          "one by one", "vmap") + f"\n{how}",
                             shape=f"raised {type(e).__name__}", raised=e)]
        if nan_same(batched) == nan_same(expected):
            return []
        return [cls.fail(case, "?", path, "vmap result differs from the calls one by one",
                         side_by_side(case, [("results", expected, batched)],
                                      "one by one", "vmap") + f"\n{how}",
                         shape="results differ")]

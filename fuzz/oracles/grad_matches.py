"""``grad-matches``: on a path's program (``GRAD``: the ``eager`` path's
``jax.new_ref`` program, run eagerly as that path runs it, and
``pl.run_state``'s, under ``jax.jit``), as a function of its float refs'
initial contents (to their final contents),
forward- and reverse-mode derivatives (the JVP and transpose rules of get,
swap and addupdate, and of the control flow around them, then discharge)
against finite differences and each other, with
``jax.test_util.check_grads``. The programs are linear in those contents,
so central differences are exact but for rounding, and a step of 1 keeps
that rounding small at float32 (the default step, 1e-4, loses about 1% on
values near 20). (Not the jax_refs program: its ``jax.checkpoint`` around
the kernel drops every ref write from reverse mode, a known bug that would
hide all others.)"""
from __future__ import annotations

import re

import jax
import numpy as np
from jax.test_util import check_grads

from fuzz import emit, ir, model, paths
from fuzz.oracles.base import Comparison, OracleFailure, refused, same, show, side_by_side

# The float dtypes whose refs grad-matches differentiates (bf16 and f16 round
# too coarsely for finite differences).
GRAD_DTYPES = ("float32", "float64")
# The finite-difference step: the programs are linear in the differentiated
# contents (stores, adds, selects; control flow hangs on dyn only), so a
# large step has no truncation error and the least rounding.
GRAD_STEP = 1.0
# How a failure of the program run eagerly (`_ways`) begins its message and shape.
_EAGERLY = "eagerly, "


def _ways(path: str) -> tuple[bool, ...]:
    """How the oracle runs ``path``'s program (eagerly or not): under
    ``jax.jit``; and on a path that runs it eagerly, eagerly too, as that
    path does (each primitive's JVP rule on concrete refs, which jit never
    runs), once it passed under jit."""
    return (False, True) if paths.fact(path, "CONTEXT") == "eager" else (False,)


def _differentiated(case: ir.Case) -> list[int]:
    """The refs grad-matches differentiates: unscoped float refs in use."""
    return [i for i in paths.unscoped(case)
            if i in model.data_refs(case) and case.refs[i].kind in GRAD_DTYPES]


# Each way the oracle fails, as the two sides a reproducer compares, of
# ``of_floats`` (the program under jax.jit as a function of the float refs'
# initial contents, to their final contents) at ``X`` (those contents). The
# programs are linear in the contents: a central difference with a step of 1
# along ones is exact but for rounding.
_ONES = "tuple(jnp.ones_like(x) for x in X)"
_SIDES = {
    "value": ("the plain call", "[v.tolist() for v in of_floats(*X)]",
              "[v.tolist() for v in {transform}]"),
    "tangents": ("jax.jvp", "[t.tolist() for t in jax.jvp(of_floats, X, X)[1]]",
                 "[t.tolist() for t in jax.linearize(of_floats, *X)[1](*X)]"),
    "fwd": ("finite differences", "[((a - b) / 2).tolist() for a, b in zip("
            "of_floats(*(x + 1 for x in X)), of_floats(*(x - 1 for x in X)))]",
            f"[t.tolist() for t in jax.jvp(of_floats, X, {_ONES})[1]]"),
    # Reverse mode against forward mode with no vmap (jax.jacfwd / jacrev
    # batch, and run_state has no batching rule): the dot-product test,
    # sum(vjp(ones)) against sum(jvp(ones)), both 1^T J 1.
    "rev": ("jax.jvp", f"[float(sum(jnp.sum(t) for t in jax.jvp(of_floats, X, {_ONES})[1]))]",
            "[float(sum(jnp.sum(g) for g in jax.vjp(of_floats, *X)[1]("
            "tuple(jnp.ones_like(y) for y in of_floats(*X)))))]"),
}
_TRANSFORMED = {"jax.jvp": "jax.jvp(of_floats, X, X)[0]",
                "jax.linearize": "jax.linearize(of_floats, *X)[0]",
                "jax.vjp": "jax.vjp(of_floats, *X)[0]"}


def _close(a, b) -> bool:
    """Tangents equal up to float32 rounding (check_grads' tolerance)."""
    return all(np.allclose(x, y, rtol=2e-3, atol=2e-3) for x, y in zip(a, b))


class GradMismatch(OracleFailure):
    """Derivatives through refs disagree with finite differences (or raise)."""
    oracle = "grad-matches"
    summary = ("JAX's derivatives of the program through its refs disagree with the "
               "program's own (finite differences, or jax.jvp against jax.vjp): {message}")
    under_jit = True
    RANK, COST = 3.3, 8   # jvp, linearize, vjp and check_grads' runs
    RULES = "differentiation"

    @classmethod
    def applies(cls, report):
        return None if _differentiated(report.case) else "no float32 or float64 ref in use"

    @classmethod
    def compare(cls, report):
        found = []
        for o in (o for o in report.fine if paths.fact(o.path, "GRAD")):
            if reason := refused(report.case, "grad", o.path):
                report.not_applied[cls.oracle] = reason
                continue
            found += cls.grad_matches(report.case, o)
            report.count(cls.oracle)
        return found

    def comparison(self, case: ir.Case, path: str):
        """How this failure shows (its ``shape``, its message): the value
        under a transformation against the plain call's, jax.linearize's
        tangents against jax.jvp's, forward-mode derivatives against finite
        differences, reverse-mode ones (jax.vjp of ones) against forward-mode
        ones (jax.jvp along ones); where AD raises, the raising side shows it."""
        if not paths.fact(path, "GRAD") or refused(case, "grad", path) or not _differentiated(case):
            return None
        eagerly = (self.shape or "").startswith(_EAGERLY)
        mode = (self.shape or "").removeprefix(_EAGERLY).split()[0]
        if "value differs" in (self.shape or ""):
            transform = re.search(r"under (jax\.\w+)", self.message)[1]
            by, want, got = _SIDES["value"]
            got, actual_by = got.format(transform=_TRANSFORMED[transform]), transform
        elif "tangents differ" in (self.shape or ""):
            (by, want, got), actual_by = _SIDES["tangents"], "jax.linearize"
        else:
            (by, want, got), actual_by = _SIDES[mode], {"fwd": "jax.jvp", "rev": "jax.vjp"}[mode]
        refs, wrt = paths.unscoped(case), _differentiated(case)
        names = [name for name, _ in paths.MODULES[path].results(case)]
        _, args = paths.load(case, path)["function"]()
        n = len(jax.tree_util.tree_leaves(args))
        at = [n - len(refs) + refs.index(i) for i in wrt]   # the float refs' initial contents
        program, leaves = paths.function_source(case, path, at, [names.index(f"r{i}") for i in wrt],
                                          name="of_floats")
        jit = "" if eagerly else "@jax.jit\n"
        source = (f"{jit}{program}X = ({paths.tuple_source(leaves[k] for k in at)})"
                  "  # the float refs' initial contents\n"
                  f"\n\ndef expected():\n    return {want}\n\n\ndef actual():\n    return {got}\n")
        return Comparison(source, by, actual_by,
                          tolerance=None if "value differs" in (self.shape or "") else 2e-3)

    @classmethod
    def grad_matches(cls, case: ir.Case, outcome: paths.Outcome) -> list[OracleFailure]:
        """``outcome`` is an error-free run of ``case`` on a ``GRAD`` path,
        whose program's argument leaves end with the unscoped refs' contents:
        its failures under jit, else (`_ways`) eagerly."""
        program = paths.load(case, outcome.path)["function"]()   # (loaded once, both ways)
        for eagerly in _ways(outcome.path):
            if found := cls._one_way(case, outcome, program, eagerly):
                return found
        return []

    @classmethod
    def _one_way(cls, case, outcome, program, eagerly: bool) -> list[OracleFailure]:
        """The failures of ``program`` (the path's function and its arguments)
        differentiated eagerly or under jit."""
        call, args = program
        call = call if eagerly else jax.jit(call)
        leaves, tree = jax.tree_util.tree_flatten(args)
        refs, wrt = paths.unscoped(case), _differentiated(case)
        at = [len(leaves) - len(refs) + refs.index(i) for i in wrt]
        names = [n for n, _ in paths.MODULES[outcome.path].results(case)]
        out_at = [names.index(f"r{i}") for i in wrt]

        def of_floats(*xs):
            full = list(leaves)
            for k, x in zip(at, xs):
                full[k] = x
            results = call(*jax.tree_util.tree_unflatten(tree, full))
            return tuple(results[k] for k in out_at)
        # Forward mode against finite differences first, then reverse mode
        # against forward (a transpose rule's bug shows in "rev" only).
        # Reverse mode through a while loop is not defined (JAX says so).
        modes = ("fwd",) if any(s.primitive == "while" for s in case.statements) else ("fwd", "rev")
        xs = tuple(leaves[k] for k in at)
        what = f"r{', r'.join(map(str, wrt))} ({', '.join(names[k] for k in out_at)} out)"
        for mode in modes:
            label = (_EAGERLY if eagerly else "") + mode   # (how its failures begin)
            try:
                # The value each transformation computes along the way first: a
                # wrong one is a wrong value, not a wrong derivative. Reverse
                # mode transposes jax.linearize's linear function: its tangents
                # must be jax.jvp's (forward mode ran first, and passed).
                if mode == "fwd":
                    plain, (value, tangents) = of_floats(*xs), jax.jvp(of_floats, xs, xs)
                    along = {"jax.jvp": value}
                else:
                    value, linear = jax.linearize(of_floats, *xs)
                    along = {"jax.linearize": value, "jax.vjp": jax.vjp(of_floats, *xs)[0]}
                for transform, value in along.items():
                    if not same(plain, value):
                        return [cls.fail(case, "?", outcome.path,
                                         f"{label}: the value of {what} under {transform} "
                                         "differs from the plain call's",
                                         side_by_side(case, [("values", show(plain), show(value))],
                                                      "plain", transform),
                                         shape=label + " value differs")]
                if mode == "rev" and not _close(linearized := linear(*xs), tangents):
                    return [cls.fail(case, "?", outcome.path,
                                     f"{label}: the tangents of {what} under jax.linearize "
                                     "differ from jax.jvp's",
                                     side_by_side(case, [("tangents", show(tangents),
                                                          show(linearized))],
                                                  "jax.jvp", "jax.linearize"),
                                     shape=label + " tangents differ")]
                # What JAX documents as unsupported may raise, but still may not
                # change the primal value (checked above).
                if mode == "fwd" or not refused(case, "reverse-mode", outcome.path):
                    check_grads(of_floats, xs, order=1, modes=(mode,), eps=GRAD_STEP)
            except Exception as e:  # noqa: BLE001 - a mismatch, or AD that raises: both findings
                shape = label + (
                    " derivatives differ" if isinstance(e, AssertionError)
                    else f" raised {type(e).__name__}")
                return [cls.fail(case, "?", outcome.path,
                                 f"{label} derivatives of {what}: "
                                 f"{paths.first_line(e)}",
                                 f"program:\n{emit.kernel_source(case)}", shape=shape,
                                 raised=None if isinstance(e, AssertionError) else e)]
        return []

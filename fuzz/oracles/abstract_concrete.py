"""``abstract-concrete``: what a path produced against what abstract
evaluation promised, and each value's aval against NumPy's ``arr[idx]`` of
the same index."""
from __future__ import annotations

from fuzz import emit, ir, model, paths
from fuzz.oracles.base import Comparison, OracleFailure, fmt, literal


class AbstractConcreteMismatch(OracleFailure):
    """What a path produced differs from what abstract evaluation promised."""
    oracle = "abstract-concrete"
    stage = "discharge"
    RANK = 1.3
    summary = ("the discharged program produced results whose avals differ from what "
               "abstract evaluation promised: {message}")

    @classmethod
    def judge(cls, report, outcome, probe):
        if outcome.error is not None:
            return []
        case, path = report.case, outcome.path
        found = [cls.fail(case, "?", path, (
            f"final {name} is {fmt(produced)}; abstract evaluation promised "
            f"{fmt(promised)} for a ref declared {fmt(declared)}"))
            for name, declared, promised, produced in zip(
                outcome.names, outcome.declared, outcome.promised, outcome.produced)
            if produced != promised or produced != declared]
        found += cls._value_shapes(case, outcome)
        if len(outcome.produced) != len(outcome.declared):
            found.append(cls.fail(case, "?", path, (
                f"{len(outcome.produced)} results for {len(outcome.declared)} refs")))
        return found

    @classmethod
    def _value_shapes(cls, case: ir.Case, outcome) -> list[OracleFailure]:
        """A value's abstract aval against what NumPy gives for the same index
        (``arr[idx].shape``) and the ref's dtype."""
        found = []
        for k, got in sorted(outcome.value_avals.items()):
            stmt = case.statements[k]
            if not stmt.produces_value:
                continue
            try:
                want = stmt.value_type(case)
            except ir.IRError:
                continue   # an invalid view has no NumPy shape
            if got != want:
                found.append(cls.fail(case, stmt.primitive, outcome.path, (
                    f"the value of {stmt.tag} is {fmt(got)}; NumPy's arr[idx] of the same "
                    f"view is {fmt(want)}"), statement=k))
        return found

    def comparison(self, case: ir.Case, path: str):
        """A value's wrong shape, shown through public API: the same index
        on a ``jax.new_ref`` (its shape under ``jax.eval_shape``) against
        NumPy's on the array. Only for a view that is one static index (a
        path that runs refs as values); None otherwise."""
        if not self.message.startswith("the value of ") or \
                paths.fact(path, "CONTEXT") not in ("refs", "eager"):
            return None
        for stmt in case.statements:
            view = getattr(stmt, "view", None)
            if not stmt.produces_value or view is None or not _one_static_index(view):
                continue
            index = emit.Source(case).indexer(view.transforms[0])   # (slices as slice())
            return Comparison(
                f"X = {literal(model.initial(case, view.ref))}\n"
                f"IDX = {index}\n\n\n"
                "def expected():\n    return list(X[IDX].shape)\n\n\n"
                "def actual():\n"
                "    return list(jax.eval_shape(lambda x: jax.new_ref(x)[IDX], X).shape)\n",
                "NumPy's x[idx]", "jax.new_ref(x)[idx]")
        return None


def _one_static_index(view: ir.View) -> bool:
    return len(view.transforms) == 1 and isinstance(view.transforms[0], ir.At) and all(
        not getattr(i, "dynamic", False) and not isinstance(i, (ir.Ds, ir.MeshIndex))
        for i in view.transforms[0].indices)

"""``partial-discharge``: discharging all refs but one (``should_discharge``)
leaves that one a ref, untouched, and, with it run as a ``jax.new_ref``, the
program ends as the full discharge does. It discharges the kernel as the
path that only traces (``EVALUATES`` False: ``abstract``) traced it, with
that path's own ``discharge``, through the source its `comparison` writes
(so a reproducer shows the partial discharge, not the full one that runs)."""
from __future__ import annotations

from fuzz import compat, ir, model, paths
from fuzz.oracles.base import (Comparison, OracleFailure, literal, nan_same,
                               not_partly_dischargeable, side_by_side, traced)

# Run after the program of a path that traces the kernel (``trace()``) and
# discharges it (``discharge(closed, should_discharge)``): the abstract path.
_SIDES = '''
MASK = {mask!r}  # which of dyn, out, r... to discharge: all but {name}
INITS = [DYN, np.zeros(OUT, np.int32), {inits}]


def traced():
    {traced}


def discharged(mask):
    """Each ref's final contents: those ``mask`` picks discharged, the rest new refs."""
    # (under jit: Pallas' masked loads and stores have no eager rule on a Ref)
    args = [x if m else jax.new_ref(x) for x, m in zip(INITS, mask)]
    got = iter(jax.jit(core.jaxpr_as_fun(discharge(traced(), should_discharge=mask)))(*args))
    return [np.asarray(next(got) if m else a[...]).tolist() for a, m in zip(args, mask)]


def expected():
    return discharged([True] * len(INITS))


def actual():
    return discharged(MASK)
'''
# The kernel traced over jax.new_ref values (public API, and the jaxpr the
# path's AbstractRefs give), where the path binds no mesh axis, physicalizes
# no semaphore and types no memory space; the path's own trace() elsewhere.
_NEW_REFS = "return jax.make_jaxpr(kernel)(*map(jax.new_ref, INITS))"


def _over_new_refs(case: ir.Case) -> bool:
    refs = [case.refs[i] for i in paths.kernel_refs(case)]
    return (not case.devices and paths.kernel_refs(case) == paths.unscoped(case)
            and not any(r.is_semaphore or r.memory_space for r in refs)
            and not any(s.allocates_semaphores for s in ir.flat(case.statements)))


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
    RULES = "partial discharge"
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
    def comparison(cls, case: ir.Case, path: str) -> Comparison | None:
        """The full discharge evaluated against the partial one, ``r<kept>``
        run as a ``jax.new_ref``, from the same initial contents: on a path
        whose program traces and discharges the kernel (None elsewhere)."""
        keep = kept(case)
        if keep is None or paths.not_applicable(case, path):
            return None
        text = paths.program(case, path)[0]
        if "\ndef trace():" not in text or "\ndef discharge(" not in text:
            return None
        refs = paths.unscoped(case)
        source = _SIDES.format(
            name=f"r{keep}", mask=[True, True, *[i != keep for i in refs]],
            inits=", ".join(literal(model.initial(case, i)) for i in refs),
            traced=_NEW_REFS if _over_new_refs(case) else "return trace()")
        return Comparison(source, "discharging every ref",
                          f"discharging every ref but r{keep} (should_discharge)")

    @classmethod
    def compare(cls, report):
        report.count(cls.oracle)
        run = traced(report)
        try:
            return cls.partial_discharge(report.case, run)
        except Exception as e:  # noqa: BLE001 - a partial discharge that raises is a finding
            return [cls.fail(report.case, "?", run.path,
                             f"partial discharge raised {paths.first_line(e)}", "",
                             shape=f"raised {type(e).__name__}", raised=e)]

    @classmethod
    def partial_discharge(cls, case: ir.Case, run: paths.Outcome) -> list[OracleFailure]:
        """Full discharge against discharge of every ref but `kept`'s, run
        from the same initial contents, as `comparison`'s source does it."""
        keep = kept(case)
        refs = paths.unscoped(case)
        program = cls.comparison(case, run.path).run(paths.load(case, run.path))
        closed = run.jaxpr
        program["traced"] = lambda: closed   # (the path traced it already)
        partial = program["discharge"](closed, should_discharge=program["MASK"])
        k = 2 + refs.index(keep)   # (after dyn and out)
        name = f"r{keep}"
        if not isinstance(partial.in_avals[k], type(closed.in_avals[k])):
            return [cls.fail(case, "?", run.path,
                             f"{name}, left undischarged, became {partial.in_avals[k]}",
                             side_by_side(case, [(name, str(closed.in_avals[k]),
                                                  str(partial.in_avals[k]))],
                                          "declared", "after partial discharge"),
                             shape="kept ref discharged")]
        try:
            want = program["expected"]()
        except Exception:  # noqa: BLE001 - the program itself fails: valid-runs' to report
            return []   # (on the paths that run it), with nothing to compare here
        got = program["actual"]()
        rows = [(n, a, b) for n, a, b in zip(("dyn", "out", *[f"r{i}" for i in refs]), want, got)]
        if all(nan_same(a) == nan_same(b) for _, a, b in rows):
            return []
        bad = next(n for n, a, b in rows if nan_same(a) != nan_same(b))
        return [cls.fail(case, "?", run.path,
                         f"final {bad} differs between full and partial discharge ({name} kept)",
                         side_by_side(case, rows, "full", f"all but {name}"),
                         shape=f"final {'kept' if bad == name else 'discharged'} ref differs")]

"""``abstract``: ``make_jaxpr`` of the kernel over ``AbstractRef``s, semaphore
dtypes physicalized as interpret mode does, then ``discharge_state``. Nothing
is evaluated. No public API discharges without evaluating, so its harness
uses JAX internals.

The harness is rendered for the running JAX release, with no branch on the
release in it (`fuzz.triage.bisect` renders a reproducer again on each
release, and each commit, it runs it on; a script kept from filing is for
the release it was filed on). What differs is the ``discharge_state``
call (`_discharge_body`). It binds the mesh's axis only for a case on a
mesh, and physicalizes semaphore dtypes (``resolve_physical_types``) only
for a kernel with a semaphore (`physicalized`): without one, that pass
changes no aval and only retraces the kernel (the same discharge, in full
and in part, on some 800 generated cases)."""
from __future__ import annotations

import inspect

from jax._src import core as jax_core
from jax._src.state import discharge as state_discharge

from fuzz import blame, compat, emit, ir, paths

NAME, COST, EVALUATES = "abstract", 1, False
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "in `discharge_state` of the traced kernel (JAX internals)"
CONTEXT = "traced"   # the kernel traced alone: no pallas_call, no refs as values
SEMAPHORES = "either"   # a stand-in int16 ref or a real semaphore type
INTERNAL = True      # only JAX internals discharge without evaluating
MEMORY_SPACE = "jax._src.state.types.AbstractRef(memory_space=)"
GRID = True   # it traces the kernel, which a grid leaves as it is
MESH = True   # one device's kernel, traced and discharged with the mesh's axis bound

_IMPORTS = """
from jax._src import core
from jax._src.state.discharge import discharge_state
from jax._src.state.types import AbstractRef
"""
_PHYSICAL_IMPORT = "from jax._src.pallas.hlo_interpreter import resolve_physical_types\n"
_AXES = "\nAXES = {axes!r}  # the mesh's axis, bound as shard_map binds it\n"

_TRACE = '''

def trace():
    """The kernel traced over abstract refs."""
    avals = [{avals}]
{body}
'''

_DISCHARGE = '''

def discharge(closed, should_discharge=True):
    """{doc}"""
{body}


def run():
    return tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in discharge(trace()).out_avals)
'''


def not_applicable(case: ir.Case) -> str | None:
    if not case.valid and any(r.scoped for r in case.refs):
        return ("run_scoped's discharge rule leaves scoped refs undischarged, so "
                "a mistake on one cannot surface without evaluation")
    if any(case.refs[i].memory_space for i in paths.kernel_refs(case)):
        return compat.lacking([MEMORY_SPACE])   # the harness's AbstractRef(aval, space)
    return None


def _ref_aval(ref: ir.Ref) -> str:
    if ref.is_semaphore:
        return f"{emit.allocation_source(ref)}.get_ref_aval()"
    space = f", {emit.memory_space_source(ref)}" if ref.memory_space else ""
    return (f"AbstractRef(core.ShapedArray({tuple(ref.shape)!r}, "
            f"{emit.dtype_source(ref.kind)}){space})")


def physicalized(case: ir.Case) -> bool:
    """Whether the harness physicalizes semaphore dtypes (as interpret mode
    does, ``resolve_physical_types``): only a kernel with a semaphore has any
    to physicalize: a semaphore-typed ref (unscoped, scoped or the
    collective's), or a statement that allocates semaphores of its own (an
    ``emit_pipeline``'s DMA semaphores; discharged unphysicalized: "dtype=dma_sem
    is not a valid dtype"). Without one, the pass changes no aval and only
    retraces the kernel."""
    return (any(r.is_semaphore for r in case.refs)
            or any(s.allocates_semaphores for s in case.statements))


def _discharge_body(physical: bool) -> list[str]:
    """The running release's ``discharge_state`` of ``closed`` (its semaphore
    dtypes physicalized first where ``physical``), returning a closed jaxpr
    of the release's kind: of a jaxpr and its consts up to 0.10.1; of a
    ``ClosedJaxpr`` in 0.10.2 to 0.10.x; of a ``Jaxpr`` carrying its consts
    from 0.11.0; stripping memory spaces, as interpret mode does, from 0.11.1."""
    params = inspect.signature(state_discharge.discharge_state).parameters
    resolved = "resolve_physical_types(closed.jaxpr, closed.consts)"
    mask = "should_discharge=should_discharge"
    if "consts" in params:
        if not physical:
            return ["return core.ClosedJaxpr(*discharge_state(closed.jaxpr, closed.consts, "
                    f"{mask}))"]
        return [f"jaxpr, consts = {resolved}",
                f"return core.ClosedJaxpr(*discharge_state(jaxpr, consts, {mask}))"]
    if "strip_memory_space" in params:
        mask += ", strip_memory_space=True"
    if not physical:
        return [f"return discharge_state(closed, {mask})"]
    if getattr(jax_core, "ClosedJaxpr", jax_core.Jaxpr) is jax_core.Jaxpr:
        # (a Jaxpr that carries its consts)
        return [f"physical, _ = {resolved}", f"return discharge_state(physical, {mask})"]
    return [f"physical = core.ClosedJaxpr(*{resolved})",   # 0.10.2 to 0.10.x
            f"return discharge_state(physical, {mask})"]


def _body(case: ir.Case, statements: list[str]) -> str:
    """A function's body of ``statements``, under the mesh's axis if any
    (both tracing and discharging retrace the kernel's axis_index)."""
    if not case.devices:
        return "\n".join(f"    {s}" for s in statements)
    return "\n".join(["    with core.extend_axis_env_nd(AXES):",
                      *(f"        {s}" for s in statements)])


def harness(case: ir.Case) -> str:
    physical = physicalized(case)
    avals = ",\n             ".join([
        f"AbstractRef(core.ShapedArray({paths.dyn(case).shape!r}, jnp.int32))",
        "AbstractRef(core.ShapedArray(OUT, jnp.int32))",
        *(_ref_aval(case.refs[i]) for i in paths.kernel_refs(case))])
    doc = ("``closed``, semaphore dtypes physicalized as interpret mode does, discharged."
           if physical else "``closed`` discharged: the refs ``should_discharge`` selects.")
    text = _IMPORTS + (_PHYSICAL_IMPORT if physical else "")
    if case.devices:
        text += _AXES.format(axes=[(ir.MESH_AXIS, case.devices)])
    text += _TRACE.format(avals=avals, body=_body(case, ["return jax.make_jaxpr(kernel)(*avals)"]))
    return text + _DISCHARGE.format(doc=doc, body=_body(case, _discharge_body(physical)))


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    return paths.frame_results(case) + paths.ref_results(case, paths.kernel_refs(case))


def model_results(case: ir.Case, meaning) -> list | None:
    return None   # avals only


def run(case: ir.Case) -> paths.Outcome:
    names, declared = zip(*results(case))
    o = paths.Outcome(NAME, names=names, declared=declared)
    o.promised = o.declared
    program = paths.load(case, NAME)
    # run()'s two steps, so the kernel is traced once: its equations give
    # the statements' value avals, and partial-discharge reuses it.
    o.jaxpr = program["trace"]()
    o.value_avals = value_avals(o.jaxpr.jaxpr, case)
    o.produced = tuple(paths.aval_of(a) for a in program["discharge"](o.jaxpr).out_avals)
    return o


def _equations(jaxpr):
    """Every equation of ``jaxpr``, nested ones (run_scoped bodies) included."""
    for eqn in jaxpr.eqns:
        yield eqn
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if hasattr(inner, "eqns"):
                yield from _equations(inner)


def value_avals(jaxpr, case: ir.Case) -> dict[int, paths.Aval]:
    """The aval abstract evaluation gives each statement's value (a get's
    result, a swap's old value), by statement number: the last equation of
    the statement's own primitive on its line (a ``dyn[i]`` read before it
    is a get too)."""
    found = {}
    for eqn in _equations(jaxpr):
        k = blame.of_traceback(eqn.source_info.traceback) if eqn.outvars else None
        if k is not None and eqn.primitive.name == case.statements[k].primitive:
            found[k] = paths.aval_of(eqn.outvars[0].aval)
    return found

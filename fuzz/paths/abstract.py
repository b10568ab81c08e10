"""``abstract``: ``make_jaxpr`` of the kernel over ``AbstractRef``s, semaphore
dtypes physicalized as interpret mode does, then ``discharge_state``. Nothing
is evaluated. No public API discharges without evaluating, so its harness
uses JAX internals."""
from __future__ import annotations

from fuzz import blame, compat, emit, ir, paths

NAME, COST, EVALUATES = "abstract", 1, False
CONTEXT = "traced"   # the kernel traced alone: no pallas_call, no refs as values
SEMAPHORES = "either"   # a stand-in int16 ref or a real semaphore type
INTERNAL = True      # only JAX internals discharge without evaluating
MEMORY_SPACE = "jax._src.state.types.AbstractRef(memory_space=)"
GRID = True   # it traces the kernel, which a grid leaves as it is
MESH = True   # one device's kernel, traced and discharged with the mesh's axis bound

_HARNESS = '''\
AXES = {axes!r}  # the mesh's axis, bound as shard_map binds it (none: no mesh)


def trace():
    """The kernel traced over abstract refs."""
    from jax._src.state.types import AbstractRef
    from jax._src import core
    avals = [AbstractRef(core.ShapedArray(DYN.shape, jnp.int32)),
             AbstractRef(core.ShapedArray(OUT, jnp.int32)),
             {ref_avals}]
    with core.extend_axis_env_nd(AXES):
        return jax.make_jaxpr(kernel)(*avals)


def discharge(closed, should_discharge=True):
    """``closed`` with semaphore dtypes physicalized as interpret mode does,
    then discharged (the refs ``should_discharge`` selects: all by default)."""
    from jax._src.state.discharge import discharge_state
    from jax._src.pallas.hlo_interpreter import resolve_physical_types
    from jax._src import core
    import inspect
    with core.extend_axis_env_nd(AXES):   # both retrace the kernel's axis_index
        jaxpr, consts = resolve_physical_types(closed.jaxpr, closed.consts)
        if "consts" in inspect.signature(discharge_state).parameters:   # JAX < 0.10.2
            return core.ClosedJaxpr(*discharge_state(jaxpr, consts, should_discharge=should_discharge))
        if hasattr(core, "ClosedJaxpr"):  # JAX < 0.12
            physical = core.ClosedJaxpr(jaxpr, consts)
        else:
            physical = jaxpr.with_consts(consts) if consts else jaxpr
        strip = ({{"strip_memory_space": True}} if "strip_memory_space"  # JAX >= 0.12
                 in inspect.signature(discharge_state).parameters else {{}})
        return discharge_state(physical, should_discharge=should_discharge, **strip)


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


def harness(case: ir.Case) -> str:
    return _HARNESS.format(axes=[(ir.MESH_AXIS, case.devices)] if case.devices else [],
                           ref_avals=", ".join(
        _ref_aval(case.refs[i]) for i in paths.kernel_refs(case)))


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

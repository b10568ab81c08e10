"""The abstract path's program is rendered for the running JAX release: no
branch on the release, no mesh axis without a mesh, no physicalizing pass
without a semaphore; and it still runs, and presses into a short snippet."""
import ast

import pytest

from fuzz import compat, ir, paths
from fuzz.ops.control import Cond, Loop, Wrap
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.common import Iota
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.paths import abstract
from fuzz.triage import snippet

DATA = ir.Case((ir.Ref("int32", (2,)),), (Swap(ir.View(0), Iota("int32", (2,))),), ("abstract",))
SEMAPHORE = ir.Case((ir.Ref("regular", ()),), (
    Signal(ir.View(0), ir.Int(2)), Wait(ir.View(0), ir.Int(1)), Read(ir.View(0))), ("abstract",))
STAND_IN = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(2)), Read(ir.View(0))),
                   ("abstract",))
MESH = ir.Case(DATA.refs, DATA.body, ("abstract",), devices=2)
MESH_SEMAPHORE = ir.Case((ir.Ref("regular", ()),), (
    Signal(ir.View(0), ir.Int(1)), Read(ir.View(0))), ("abstract",), devices=2)
X64 = ir.Case((ir.Ref("int64", (2,)),), (Swap(ir.View(0), Iota("int64", (2,))),), ("abstract",),
              x64=True)
AT = [ir.View(0, (ir.At((ir.Int(k),)),)) for k in range(3)]
CONTROL = ir.Case((ir.Ref("int32", (3,)),), (
    Loop(ir.Int(3, True), (AddUpdate(AT[0], Iota("int32", (), 1)),)),
    Cond(ir.Int(1, True), ((AddUpdate(AT[1], Iota("int32", (), 2)),),
                           (Get(AT[2]),))),), ("abstract",))
# An internal finding's case: its snippet was 32 lines with every release's branches.
SHARD_MAP = ir.Case((ir.Ref("int16", ()),), (Wrap("shard_map", (Get(ir.View(0)),)),), ("abstract",))
CASES = {"data": DATA, "semaphore": SEMAPHORE, "stand-in": STAND_IN, "mesh": MESH,
         "mesh-semaphore": MESH_SEMAPHORE, "x64": X64, "control": CONTROL}


def _program(case):
    if why := paths.not_applicable(case, "abstract"):
        pytest.skip(why)
    return paths.program(case, "abstract")[0]


def _functions(text):
    return {n.name: n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize("name", CASES)
def test_the_program_has_no_branch_on_the_release(name):
    text = _program(CASES[name])
    assert "inspect" not in text and "hasattr" not in text and "signature" not in text
    functions = _functions(text)
    for f in ("trace", "discharge", "run"):
        assert not [n for n in ast.walk(functions[f]) if isinstance(n, (ast.If, ast.IfExp))], f
        # (imports at the program's top level, not in the functions)
        assert not [n for n in ast.walk(functions[f]) if isinstance(n, ast.ImportFrom)], f
    # The names and signatures oracles and reproducers call.
    for signature in ("trace()", "discharge(closed, should_discharge=True)", "run()"):
        assert f"\ndef {signature}:\n" in text


@pytest.mark.parametrize("name", CASES)
def test_the_mesh_axis_is_bound_only_on_a_mesh(name):
    case = CASES[name]
    text = _program(case)
    functions = _functions(text)
    for f in ("trace", "discharge"):
        source = ast.get_source_segment(text, functions[f])
        assert ("with core.extend_axis_env_nd(AXES):" in source) == bool(case.devices), f
    assert ("AXES = [('x', 2)]" in text) == bool(case.devices)
    assert ("AXES" in text) == bool(case.devices)


@pytest.mark.parametrize("name", CASES)
def test_semaphore_dtypes_are_physicalized_only_where_there_are_some(name):
    case = CASES[name]
    text = _program(case)
    has = any(r.is_semaphore for r in case.refs)
    assert abstract.physicalized(case) == has
    assert ("resolve_physical_types" in text) == has
    # a stand-in semaphore is an int16 array: nothing to physicalize
    assert not abstract.physicalized(STAND_IN)


def test_a_pipeline_allocates_semaphores_of_its_own_so_it_is_physicalized():
    from fuzz.ops.control import Pipeline
    pipe = Pipeline(3, (0,), (Get(ir.View(0, (ir.STEP, ir.At((ir.Int(1),))))),), True)
    nested = ir.Case((ir.Ref("int32", (3, 2)),), (Cond(ir.Int(1, True), ((pipe,), ())),),
                     ("abstract",))
    assert abstract.physicalized(nested)
    if paths.not_applicable(nested, "abstract"):
        return
    assert "resolve_physical_types" in paths.program(nested, "abstract")[0]
    o = paths.run(nested, "abstract")
    assert o.error is None, paths.first_line(o.error)


@pytest.mark.parametrize("name", CASES)
def test_the_program_runs_and_discharges_as_declared(name):
    case = CASES[name]
    _program(case)
    with compat.enable_x64(case.x64):
        o = paths.run(case, "abstract")
    assert o.error is None, paths.first_line(o.error)
    assert o.produced == o.declared


@pytest.mark.parametrize("name", ["data", "control", "stand-in", "mesh"])
def test_without_a_semaphore_physicalizing_would_change_nothing(name, monkeypatch):
    """What skipping resolve_physical_types leaves out: a retrace, the same
    discharge (the same equations and avals), in full or in part."""
    case = CASES[name]
    _program(case)

    def discharged(physical):
        monkeypatch.setattr(abstract, "physicalized", lambda c: physical)
        program = paths.load(case, "abstract")
        closed = program["trace"]()
        mask = [k != 2 for k in range(len(closed.in_avals))]
        return [_signature(program["discharge"](closed, **how))
                for how in ({}, {"should_discharge": mask})]

    assert discharged(True) == discharged(False)


def _signature(closed):
    """A jaxpr's avals and equations, nested ones included, without names."""
    jaxpr = closed.jaxpr
    eqns = [(e.primitive.name, [str(getattr(v, "aval", v)) for v in e.invars],
             [str(v.aval) for v in e.outvars],
             [_signature(x) for p in e.params.values()
              for x in (p if isinstance(p, (tuple, list)) else (p,))
              if hasattr(getattr(x, "jaxpr", None), "eqns")])
            for e in jaxpr.eqns]
    return [str(v.aval) for v in jaxpr.invars], [str(a) for a in closed.out_avals], eqns


def test_the_snippet_of_an_abstract_finding_fits_in_15_lines():
    _program(SHARD_MAP)
    text = snippet.snippet(SHARD_MAP, "abstract")
    lines = text.splitlines()
    assert len(lines) <= 15, text
    assert not any(line.startswith(" ") and "import" in line for line in lines), text
    assert "from jax._src.pallas.hlo_interpreter" not in text
    assert "extend_axis_env_nd" not in text and "inspect" not in text

"""The case IR: JSON round trip, rejection of bad data, rendered source."""
import json
import os
import subprocess
import sys

import pytest
from hypothesis import given

from fuzz import ir, paths, serialize
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.triage import render
from strategies.programs import invalid_programs, programs

SAMPLE = ir.Case(
    refs=(ir.Ref("int16", (4,)), ir.Ref("barrier", (2, 3), scoped=True),
                ir.Ref("regular", ())),
    body=(
        Signal(ir.View(0, (ir.At((ir.Int(-3),)),)), ir.Int(3)),
        Signal(ir.View(1, (ir.At((ir.Int(1, True), ir.Slice(None, None, 2))),
                              ir.At((ir.Int(-1),)))), ir.Int(2)),
        Wait(ir.View(1, (ir.Reshape((3, 2)), ir.At((ir.Ellipsis_(), ir.Int(2), ir.Int(0))))),
                ir.Int(1, True), decrement=True),
        Signal(ir.View(2, ()), ir.Int(5, True)),
        Read(ir.View(0, (ir.At((ir.Ds(ir.Int(1, True), 2),)), ir.At((ir.Int(0),))))),
        Read(ir.View(1, (ir.At((ir.IntArray((1, 0), True), ir.Int(2))), ir.At((ir.Int(0),))))),
        Read(ir.View(2, ())),
    ))
ARRAYS_ONLY = ir.Case(
    refs=(ir.Ref("int16", (2, 3)), ir.Ref("int16", ())),
    body=(Signal(ir.View(0, (ir.At((ir.Slice(None, None, 2), ir.Int(1, True))), ir.At((ir.Int(-1),)))),
                    ir.Int(7)),
          Wait(ir.View(1, ()), ir.Int(2, True)),
          Read(ir.View(0, (ir.At((ir.Int(1), ir.Int(1))),)))))


@given(programs())
def test_valid_programs_round_trip_through_json(case):
    assert serialize.loads(serialize.dumps(case)) == case


@given(invalid_programs())
def test_invalid_programs_round_trip_through_json(case):
    assert serialize.loads(serialize.dumps(case)) == case


def _mutate(**edit):
    data = serialize.to_data(SAMPLE)
    for path, value in edit.items():
        node = data
        *parents, last = path.split("/")
        for key in parents:
            node = node[int(key) if key.isdigit() else key]
        node[int(last) if last.isdigit() else last] = value
    return json.dumps(data)


@pytest.mark.parametrize("text, field", [
    (serialize.dumps(SAMPLE)[:-40], "not valid JSON"),
    ("[]", "a case is a JSON object"),
    (_mutate(schema=99), "schema"),
    (_mutate(**{"refs/0/shape": "4"}), "case.refs[0].shape"),
    (_mutate(**{"refs/0/shape/0": "x"}), "case.refs[0].shape[0]"),
    (_mutate(**{"refs/0/kind": "__import__('os').system('x')"}), "ref kind"),
    (_mutate(**{"body/0/view/transforms/0/op": "exec"}), "case.body[0].view.transforms[0].op"),
    (_mutate(**{"body/0/bogus": 1}), "case.body[0].bogus"),
    (_mutate(**{"body/2/decrement": "yes"}), "case.body[2].decrement"),
    (_mutate(**{"body/0/inc/value": 1.5}), "case.body[0].inc.value"),
    (_mutate(**{"body/0/view/ref": 9}), "ref 9"),
])
def test_bad_json_is_rejected_naming_the_field(text, field):
    with pytest.raises(serialize.CaseFormatError, match=None) as e:
        serialize.loads(text)
    assert field in str(e.value)
    assert "\n" not in str(e.value)


def test_schema_1_cases_load_as_refs():
    data = serialize.to_data(SAMPLE)
    data["schema"] = 1
    data["semaphores"] = data.pop("refs")
    assert serialize.from_data(data) == SAMPLE


def test_ir_rejects_malformed_cases():
    with pytest.raises(ir.IRError, match="at least one ref"):
        ir.Case((), ())
    with pytest.raises(ir.IRError, match="path"):
        ir.Case((ir.Ref("int16", ()),), (), paths=("gpu",))
    with pytest.raises(ir.IRError, match="bitcast dtype"):
        ir.Case((ir.Ref("int16", ()),), (Read(ir.View(0, (ir.Bitcast("os.system"),))),))
    with pytest.raises(ir.IRError, match="memory space"):
        ir.Case((ir.Ref("regular", (), memory_space="smem"),), ())
    with pytest.raises(ir.IRError, match="memory space"):
        ir.Case((ir.Ref("int8", (), memory_space="hbm"),), ())
    with pytest.raises(ir.IRError, match="aliased"):
        ir.Case((ir.Ref("int8", (), scoped=True, aliased=True),), ())


def test_schema_2_cases_load_with_default_memory_space_and_no_aliasing():
    data = serialize.to_data(SAMPLE)
    data["schema"] = 2
    for ref in data["refs"]:
        del ref["memory_space"], ref["aliased"]
    assert serialize.from_data(data) == SAMPLE


def test_view_shapes_follow_numpy():
    sems = (ir.Ref("int16", (4, 3)),)
    assert ir.view_shape(sems, ir.View(0, (ir.At((ir.IntArray((0, 1, 2)), ir.Slice(None, 2))),))) == (3, 2)
    assert ir.view_shape(sems, ir.View(0, (ir.Transpose((1, 0)), ir.Reshape((2, 6))))) == (2, 6)
    assert ir.view_shape(sems, ir.View(0, (ir.At((ir.Ellipsis_(), ir.Int(-1))),))) == (4,)
    with pytest.raises(ir.IRError):
        ir.view_shape(sems, ir.View(0, (ir.At((ir.Int(4),)),)))


# Runs every rendered script in one fresh interpreter, printing one JSON line each.
_DRIVER = """
import contextlib, io, json, runpy, sys
for path in sys.argv[1:]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit:
            pass
    print(buf.getvalue().strip().splitlines()[-1])
"""


def _live(case, path):
    o = paths.run(case, path)
    if o.error is not None:
        return {"error": type(o.error).__name__}
    return {"avals": [[list(s), d] for s, d in o.produced],
            "values": [v.tolist() for v in o.values]}


def test_rendered_scripts_do_what_the_live_build_does(tmp_path):
    runs = [(c, p) for c in (SAMPLE, ARRAYS_ONLY) for p in ir.PATHS
            if not paths.not_applicable(c, p)]
    assert len(runs) == 5
    files = []
    for i, (case, path) in enumerate(runs):
        f = tmp_path / f"case{i}_{path}.py"
        f.write_text(render.render(case, path))
        files.append(str(f))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPOTHESIS")}
    proc = subprocess.run([sys.executable, "-c", _DRIVER, *files], capture_output=True,
                          text=True, timeout=300, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for (case, path), line in zip(runs, proc.stdout.strip().splitlines()):
        rendered = json.loads(line)
        rendered.pop("message", None)
        assert rendered == _live(case, path), (path, render.render(case, path))
    assert len(proc.stdout.strip().splitlines()) == len(runs)


def test_rendered_source_uses_only_public_api_outside_the_abstract_path():
    for case, path in ((ARRAYS_ONLY, "run_state"), (SAMPLE, "pallas_call")):
        src = render.render(case, path)
        assert "_src" not in src
        compile(src, "<case>", "exec")
    with pytest.raises(ValueError, match="cannot render for run_state"):
        render.render(SAMPLE, "run_state")

"""The source a kernel on a mesh renders to: its device-count header on one
line and ``on_mesh`` (pallas_call's shard_map over the mesh) in two, so a
report's snippet keeps its lines for the kernel; and the program still runs
on the mesh as before."""
import os
import subprocess
import sys

import numpy as np
import pytest

from fuzz import compat, ir, model, oracles, paths
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.ref.get import Get
from fuzz.ops.semaphore.read import Read
from fuzz.suppressions import known_findings
from fuzz.triage import snippet

# What the snippet of the remote-copy finding's example came to (26 lines
# before: the header's two, on_mesh's six, one line per copy-in; then 22:
# on_mesh's four, the x64 flag and the devices on lines of their own; then
# 18: a copy started and waited on at once in two lines).
REMOTE_COPY_LINES = 17


# How the harness zeroes ``out`` first (an output block starts undefined).
ZERO_OUT = "out[...] = jnp.zeros(out.shape, jnp.int32)"

def _remote_copy():
    return next(k for k in known_findings.KNOWN
                if k.id == "tpu-interpret-remote-copy-of-64-bit-data").example


def _shift(devices=2):
    """A ring shift of r0 into r1 by one device, no barrier (the HLO
    interpreter runs in lockstep)."""
    a, sem = ir.Ref("int32", (2,)), ir.Ref("dma", ())
    copy = (ir.View(0), ir.View(1), ir.View(3), ir.View(2))
    to = ir.MeshIndex(1)
    return ir.Case((a, a, sem, sem), (DmaStart(*copy, device_id=to), DmaWait(*copy, device_id=to)),
                   devices=devices)


def test_a_mesh_cases_snippet_spends_few_lines_on_the_mesh():
    text = snippet.snippet(_remote_copy(), "tpu_interpret", said="Bug: x")
    lines = text.splitlines()
    assert len(lines) <= REMOTE_COPY_LINES, text
    header = [line for line in lines if "jax_num_cpu_devices" in line]
    assert header == ['jax.config.update("jax_num_cpu_devices", 2)'], text
    # x64 as the reproducer has it: the context manager around the call
    assert [line for line in lines if "x64" in line] == [
        line for line in lines if line.startswith(f"with {compat.ENABLE_X64}(True): print(")], text
    start = lines.index("def on_mesh(call, P=jax.sharding.PartitionSpec):")
    assert lines[start + 1].startswith("    return jax.shard_map("), text
    assert not lines[start + 2].startswith(" "), text   # on_mesh is two lines
    assert any(line.endswith("; copy.start(); copy.wait()") for line in lines), text
    # the kernel's copy-ins on one line (no ``out``: the kernel reads no semaphore)
    assert "    r0[...] = x0[...]; r1[...] = x1[...]" in lines, text
    assert ZERO_OUT not in text, text


def test_the_program_keeps_its_mesh_and_copies_in_order():
    text, _ = paths.program(_remote_copy(), "pallas_call")
    assert "jax.sharding.Mesh(jax.devices()[:2], 'x')" in text
    assert "in_specs=(P(), *[P('x')] * 2), out_specs=P('x'), check_vma=False)" in text
    # its plain form passes no ``dyn``: the kernel indexes with none
    plain, _ = paths.program(_remote_copy(), "pallas_call", plain=True)
    assert "lambda *blocks: " in plain and "in_specs=P('x'), out_specs=P('x')" in plain, plain
    # ``out`` zeroed (where the kernel reads a semaphore), then five
    # copy-ins to a line, in operand order
    many = ir.Case((*(ir.Ref("int32", (2,)) for _ in range(7)), ir.Ref("regular", ())),
                   (*(Get(ir.View(i)) for i in range(7)), Read(ir.View(7))))
    kernel = paths.program(many, "pallas_call")[0].split("def pallas_kernel(")[1].split("\n")
    assert kernel[1:3] == ["    " + "; ".join([ZERO_OUT, *(f"r{i}[...] = x{i}[...]" for i in range(5))]),
                           "    r5[...] = x5[...]; r6[...] = x6[...]"], kernel
    report = oracles.check(many, on_paths=("pallas_call",))   # and each comes back as it was
    assert not report.failures and report.compared["model-vs-path"] == 1, report


@pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason=(
    "JAX before 0.12 cannot discharge a remote copy to a mesh device id"))
def test_a_ring_shift_on_a_mesh_still_agrees_with_the_model():
    report = oracles.check(_shift(), on_paths=("pallas_call",))
    assert not report.failures, report.failures
    assert report.compared["model-vs-path"] == 1, report.skipped


@pytest.mark.skipif(compat.jax_version()[:2] < (0, 12), reason=(
    "JAX before 0.12 cannot discharge a remote copy to a mesh device id"))
def test_a_mesh_cases_snippet_runs_standalone(tmp_path):
    case = _shift()
    text = snippet.snippet(case, "pallas_call")
    ran = subprocess.run([sys.executable, "-I", "-c", text], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300,
                         env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    assert ran.returncode == 0, text + ran.stderr[-2000:]
    blocks = model.pattern(ir.Ref("int32", (case.devices, 2)), 0)
    # r0 as it was and r1 its sender's r0 (no ``out``: it reads no semaphore)
    assert ran.stdout.strip() == \
        str([blocks.tolist(), np.roll(blocks, 1, axis=0).tolist()]), text + ran.stdout

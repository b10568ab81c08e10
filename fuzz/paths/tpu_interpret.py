"""``tpu_interpret``: the ``pallas_call`` under the TPU interpreter,
``interpret=pltpu.InterpretParams()``, which runs the kernel equation by
equation (semaphores as Python objects) and calls no kernel-body discharge
rule: an independent implementation to compare the discharged one with."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import re

# Imported here, before any case runs: importing it midway (a rendered
# program's own import) changed how the next nested pallas_call discharged.
from jax.experimental.pallas import tpu as pltpu  # noqa: F401

from fuzz import compat, ir, model, paths
from fuzz.paths import pallas_call

NAME, COST, EVALUATES = "tpu_interpret", 4, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "in `pl.pallas_call(..., interpret=pltpu.InterpretParams())`"
CONTEXT = "pallas"
SEMAPHORES = "real"   # an int16 ref is only memory here
BLOCKS_ON_WAIT = True   # a wait that never completes blocks it, as on hardware
RULES = "tpu-interpreter"   # its own semaphores, copies, loads and stores, not discharge rules
PUBLIC_RANK = 4
GRID = MESH = True   # the pallas_call's grid and mesh
PLAIN = True   # the pallas_call's plain form

# The interpreter's only report of final counts: a line it prints at kernel
# exit for (the first) semaphore left non-zero.
_LEFTOVER = re.compile(r"Semaphore \d+ has non-zero count .* at kernel exit: (-?\d+)")


def not_applicable(case: ir.Case) -> str | None:
    if not case.valid:
        # Invalid programs have no model, so a wait that blocks forever (which
        # this interpreter really does) cannot be ruled out.
        return "invalid programs may block forever under the TPU interpreter"
    if any(not case.refs[i].is_semaphore for i in model.counts_refs(case)):
        return STAND_INS   # (`refused` names the statements that count on one)
    return None


STAND_INS = "the TPU interpreter takes real semaphores, not int16 refs"


def restated(case: ir.Case) -> ir.Case:
    """``case`` with each int16 ref that stands in for semaphores of one
    kind typed as that kind: counted by copies (and read), a DMA semaphore;
    signalled and waited on (and read), a regular one. Interpret mode's
    stand-in means what the type does (the model counts both alike), so the
    program is the same one, in the semaphores this interpreter takes; a
    stand-in of both uses stays (`refused`). Half the drawn programs with
    semaphores count on stand-ins only, their copies among them."""
    uses: dict[int, set[str]] = {}
    for stmt in case.statements:
        counted = stmt.counted()
        for v in counted:
            uses.setdefault(v.ref, set()).add(
                "read" if stmt.primitive == "semaphore_read" else stmt.family)
        for r in (*(v.ref for v in ir.views(stmt) if v not in counted), *stmt.slices()):
            uses.setdefault(r, set()).add("data")   # (read, written or sliced as data)
    kinds = {i: "dma" if found <= {"dma", "read"} else "regular"
             for i, found in uses.items()
             if case.refs[i].kind == "int16" and "data" not in found
             and not found >= {"dma", "semaphore"}}
    if not kinds:
        return case
    return dataclasses.replace(case, refs=tuple(
        dataclasses.replace(r, kind=kinds[i], memory_space=None, aliased=False) if i in kinds
        else r for i, r in enumerate(case.refs)))


def refused(case: ir.Case, stmt: ir.Statement) -> str | None:
    """A statement on an int16 ref standing in for a semaphore: only the HLO
    interpreter takes one; here it is just memory (its errors: KeyError,
    "Length of slice indices"). Dropped with every other statement on that
    ref (`fuzz.paths.projected`), the copies of half the drawn programs with
    one still run here."""
    stand_ins = {i for i in model.counts_refs(case) if not case.refs[i].is_semaphore}
    if any(v.ref in stand_ins for v in (*ir.views(stmt), *stmt.counted())):
        return STAND_INS
    return None


results = pallas_call.results


def model_results(case: ir.Case, meaning) -> list | None:
    """pallas_call's, but for its out vector (None: not predicted), which is
    never written here: semaphore reads do not run on this interpreter."""
    values = pallas_call.model_results(case, meaning)
    return [None, *values[1:]] if pallas_call.takes_out(case) else values


PARAMS = ""   # InterpretParams' defaults: DMAs run as they are waited on, NaN-filled memory


def harness(case: ir.Case, params: str = PARAMS, plain: bool = False) -> str:
    return pallas_call.harness(case, interpret=f"pltpu.InterpretParams({params})", plain=plain)


def run(case: ir.Case, name: str = NAME) -> paths.Outcome:
    """Run ``case`` on ``name``, this interpreter under some options."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            o = paths.run_program(case, name)
    except Exception:
        # The interpreter's global state is unusable after an error until reset;
        # and the failed kernel's other devices may still have callbacks in
        # flight, whose error would surface in the next case (after the known
        # failure of a 64-bit remote copy under x64, the next 1-device kernel
        # failed with its "Expected: int64"): wait for them here.
        compat.drain_effects()
        compat.reset_tpu_interpret()
        raise
    if case.num_reads:  # semaphore reads are not interpreted on CPU
        o.reads = None
    found = _LEFTOVER.search(printed.getvalue())
    o.leftover = int(found.group(1)) if found else 0
    return o

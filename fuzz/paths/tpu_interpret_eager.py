"""``tpu_interpret_eager``: the TPU interpreter under the other options
that must not change what a race-free program means:
``pltpu.InterpretParams(dma_execution_mode="eager",
uninitialized_memory="zero", detect_races=True, on_race="warn")`` (JAX
0.10 has no ``on_race``: it only reports). DMAs
run as they start (not as they are waited on), memory starts at zero (not
NaN), and its race detector watches every access; whether it saw a race
(``Outcome.races``) is checked against the model's verdict
(fuzz/oracles/interpreter.py, ``race-detection``). Only cases with a copy
or a semaphore come here: the race detector keeps a vector clock per
semaphore (its signals and waits order the kernel's accesses); without
either, no option changes a drawn program (which reads no memory it did
not write).

``pltpu.InterpretParams`` (jax/_src/pallas/mosaic/interpret/params.py)
documents each option; ``races.races_found`` is where the detector says so."""
from __future__ import annotations

from fuzz import compat, ir, paths
from fuzz.paths import pallas_call, tpu_interpret

NAME, COST, EVALUATES = "tpu_interpret_eager", 5, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = ("in `pl.pallas_call(..., "
         'interpret=pltpu.InterpretParams(dma_execution_mode="eager", ...))`')
CONTEXT = "pallas"
SEMAPHORES = "real"
BLOCKS_ON_WAIT = True
RULES = "tpu-interpreter"
DETECTS_RACES = True   # detect_races=True: JAX promises it sees a race with a copy
GRID = MESH = PLAIN = True
VARIANT_OF = "tpu_interpret"   # the same interpreter: its refusals and known bugs are that one's
PARAMS = 'dma_execution_mode="eager", uninitialized_memory="zero", detect_races=True'


def not_applicable(case: ir.Case) -> str | None:
    if not any(s.family in ("dma", "semaphore") for s in case.statements):
        return "no copy or semaphore: no interpreter option changes what this program does"
    return tpu_interpret.not_applicable(case)


restated, refused = tpu_interpret.restated, tpu_interpret.refused
results = pallas_call.results
model_results = tpu_interpret.model_results


def harness(case: ir.Case, plain: bool = False) -> str:
    # A race is reported, not raised (0.12's default raises; 0.10 only reports).
    warn = ', on_race="warn"' if compat.has_interpret_option("on_race") else ""
    return tpu_interpret.harness(case, PARAMS + warn, plain)


def run(case: ir.Case) -> paths.Outcome:
    o = tpu_interpret.run(case, NAME)
    o.races = compat.tpu_races_found()
    return o

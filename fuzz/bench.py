"""Where the time goes: cases per second for each tier and oracle, side by
side with the raw cost of ``make_jaxpr`` + ``discharge_state`` on the same
cases.

    python -m fuzz.bench [N] [--write-docs]

``--write-docs`` also writes the tables into their section of
docs/measurements.md (fuzz/measurements.py).

Six samples, because no one case runs everywhere: int16 programs (every
path but the TPU interpreter, which takes real semaphores only, and refs
under jit), programs over REGULAR semaphores (every path but ``run_state``,
which takes arrays only), flat data-ref programs (every path), data-ref
programs with control flow (each has a loop, cond, pl.when or wrapper),
flat data-ref programs over a pallas_call grid (its two interpreters only)
flat copy programs (the kernel paths, the TPU interpreter under both
sets of options among them), and flat data-ref programs with a pattern
of remote copies on a mesh of 1, 2, 4 and 8 devices (the same paths).
Columns run interleaved, case by case, so drift hits each alike. Prints
ratios measured in this one run; nothing is asserted.
"""
from __future__ import annotations

import sys
import time

import jax
from hypothesis import HealthCheck, given, settings

from fuzz import model, oracles, paths
from fuzz.measurements import recording, take_flag
from strategies.programs import programs

SHAPE = ("seed-invariant", "aval-preserved", "effects", "abstract-concrete", "valid-runs")


def sample(n: int, kind: str | None, applicable: str, *, control: bool = False,
           grid: bool = False, copies: bool = False, devices: int | None = None):
    """``n`` programs over semaphores of ``kind`` (None: data refs only) that
    ``applicable`` can run; with ``control``, only those with a control
    statement, else only flat ones; with ``grid``, only those over a
    pallas_call grid, else none; with ``copies``, only those with a copy;
    with ``devices``, only those on a mesh of that many, else none."""
    cases = []
    mesh = (devices,) if devices else False
    strategy = (programs(max_semaphores=0, max_depth=2 if control else 0, grid=grid, mesh=mesh)
                if kind is None else programs(kinds=(kind,), data_dtypes=(), max_depth=0,
                                              grid=False, mesh=False))
    if control:
        strategy = strategy.filter(lambda c: any(s.block_fields for s in c.body))
    if grid:
        strategy = strategy.filter(lambda c: c.grid is not None)
    if copies:
        strategy = strategy.filter(lambda c: any(s.family == "dma" for s in c.statements))

    @settings(max_examples=n, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(case):
        cases.append(case)
    collect()
    return [c for c in cases if not paths.not_applicable(c, applicable)][:n]


def raw_discharge(case):
    """make_jaxpr + discharge_state alone (the abstract path's program, which
    is rendered and executed first: about 2 ms): no probes, no oracles."""
    program = paths.load(case, "abstract")
    program["discharge"](program["trace"]())


def _columns(evaluating):
    columns = {"raw make_jaxpr+discharge": raw_discharge,
               "model alone": model.evaluate,
               "abstract tier": lambda c: oracles.check(c, on_paths=("abstract",))}
    for path in evaluating:
        columns[f"{path} + model"] = (lambda c, p=path: oracles.check(
            c, on_paths=(p,), oracles=SHAPE + ("model-vs-path",)))
    for name in ("jit-eager", "chain-equivalence", "control-unrolled", "vmap-stack",
                 "grad-matches", "interpret-options", "race-detection", "left-over-counts"):
        columns[f"{name} (+ its runs)"] = (
            lambda c, n=name: oracles.check(c, on_paths=evaluating, oracles=SHAPE + (n,)))
    columns["full tier (every path, oracle)"] = oracles.check
    return columns


def table(title, cases, columns):
    seconds = dict.fromkeys(columns, 0.0)
    for case in cases:
        for name, fn in columns.items():
            start = time.perf_counter()
            try:
                fn(case)
            except Exception:  # noqa: BLE001 - a raising case still costs time
                pass
            seconds[name] += time.perf_counter() - start
    raw = seconds["raw make_jaxpr+discharge"]
    print(f"\n{title}: {len(cases)} cases")
    print(f"{'column':<36}{'cases/s':>10}{'ms/case':>10}{'x raw time':>12}")
    for name, s in seconds.items():
        print(f"{name:<36}{len(cases) / s:>10.1f}{1000 * s / len(cases):>10.1f}{s / raw:>12.2f}")


def main(argv=None):
    argv, write_docs = take_flag(sys.argv[1:] if argv is None else argv)
    with recording("bench", write_docs, "fuzz.bench", argv):
        tables(argv)


def tables(argv):
    n = int((argv or ["100"])[0])
    print(f"JAX {jax.__version__}")
    table("int16 programs", sample(n, "int16", "run_state"),
          _columns(("run_state", "pallas_call")))
    table("REGULAR-semaphore programs", sample(n, "regular", "tpu_interpret"),
          _columns(("pallas_call", "tpu_interpret")))
    data_paths = ("run_state", "jax_refs", "pallas_call", "tpu_interpret")
    table("data-ref programs", sample(n, None, "jax_refs"), _columns(data_paths))
    table("data-ref programs with control flow", sample(n, None, "jax_refs", control=True),
          _columns(data_paths))
    table("data-ref programs over a pallas_call grid", sample(n, None, "pallas_call", grid=True),
          _columns(("pallas_call", "tpu_interpret")))
    table("copy programs", sample(n, None, "tpu_interpret_eager", copies=True),
          _columns(("pallas_call", "tpu_interpret", "tpu_interpret_eager")))
    for devices in (1, 2, 4, 8):   # a pattern of remote copies in each
        table(f"data-ref programs on a mesh of {devices} devices",
              sample(n, None, "pallas_call", devices=devices),
              _columns(("pallas_call", "tpu_interpret", "tpu_interpret_eager")))


if __name__ == "__main__":
    main()

"""Throughput benchmark: cases per second on each path, side by side with the
raw cost of ``make_jaxpr`` + ``discharge_state`` on the same cases.

    python -m fuzz.bench [N]

Prints ratios measured in this one run; nothing is asserted.
"""
from __future__ import annotations

import sys
import time

import jax
from hypothesis import HealthCheck, given, settings

from fuzz import compat, emit, oracles, paths


def sample(n: int):
    from strategies import programs
    cases = []

    @settings(max_examples=n, database=None, derandomize=True, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(kinds=("int16",)))
    def collect(case):
        cases.append(case)
    collect()
    # Only cases every path can run, so each column times the same work.
    return [c for c in cases if not paths.not_applicable(c, "run_state")][:n]


def raw_discharge(case):
    """make_jaxpr + discharge_state alone: no probes, no oracles."""
    avals = [compat.ref_aval(shape, dtype) for shape, dtype in paths.physical_avals(case)]
    compat.discharge_closed(jax.make_jaxpr(emit.live_kernel(case))(*avals))


def main(argv=None):
    n = int((argv or sys.argv[1:] or ["200"])[0])
    cases = sample(n)
    columns = {"raw make_jaxpr+discharge": lambda c: raw_discharge(c)}
    for path in paths.RUNNERS:
        columns[f"{path} (+probes, oracles)"] = (
            lambda c, p=path: oracles.check(c, on_paths=(p,)))
    seconds = dict.fromkeys(columns, 0.0)
    for case in cases:  # interleaved, so drift hits every column alike
        for name, fn in columns.items():
            start = time.perf_counter()
            try:
                fn(case)
            except Exception:  # noqa: BLE001 - a raising case still costs time
                pass
            seconds[name] += time.perf_counter() - start
    raw = seconds["raw make_jaxpr+discharge"]
    print(f"JAX {jax.__version__}, {len(cases)} cases (int16 programs, every path applicable)")
    print(f"{'column':<34}{'cases/s':>10}{'x raw time':>12}")
    for name, s in seconds.items():
        print(f"{name:<34}{len(cases) / s:>10.1f}{s / raw:>12.2f}")


if __name__ == "__main__":
    main()

"""How long one JAX release's environment takes to make, by tool
(a measurement, not a test; it chose uv for `fuzz.triage.releases`):

    python -m fuzz.bench_releases [RELEASE] [--write-docs]    (default 0.10.2)

For uv and for venv + pip, side by side in one run: cold (an empty
download cache of the tool's own) and warm (the same cache, a second
environment). Prints one line of JSON per run, then the ratios; with
``--write-docs`` also into their section of docs/measurements.md.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile

from fuzz.triage import releases
from fuzz.measurements import recording, take_flag

CACHE_VARIABLE = {"uv": "UV_CACHE_DIR", "pip": "PIP_CACHE_DIR"}


def measure(release: str) -> dict:
    seconds = {}
    with tempfile.TemporaryDirectory(prefix="discharge-fuzz-bench-") as tmp:
        for tool in ("uv", "pip"):
            saved = os.environ.get(CACHE_VARIABLE[tool])
            os.environ[CACHE_VARIABLE[tool]] = os.path.join(tmp, f"{tool}-cache")
            try:
                for run in ("cold", "warm"):
                    done = releases.create(release, os.path.join(tmp, f"{tool}-{run}"), tool)
                    seconds[tool, run] = done["seconds"]
                    print(json.dumps({"tool": tool, "run": run, **done}), flush=True)
            finally:
                if saved is None:
                    os.environ.pop(CACHE_VARIABLE[tool])
                else:
                    os.environ[CACHE_VARIABLE[tool]] = saved
    ratios = {f"pip_over_uv_{run}": round(seconds["pip", run] / seconds["uv", run], 1)
              for run in ("cold", "warm")}
    print(json.dumps(ratios))
    return ratios


def main(argv=None):
    argv, write_docs = take_flag(sys.argv[1:] if argv is None else argv)
    with recording("bench_releases", write_docs, "fuzz.bench_releases", argv):
        measure(argv[0] if argv else "0.10.2")


if __name__ == "__main__":
    main()

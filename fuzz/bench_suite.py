"""Where the test suite's time goes: wall time per test file, each file run
alone (``pytest --hypothesis-profile=ci FILE``, one process), then the whole
suite as CI runs it (``-n auto``).

    python -m fuzz.bench_suite                     # this checkout
    python -m fuzz.bench_suite --against ../old    # and another, side by side
    python -m fuzz.bench_suite --write-docs        # also into docs/measurements.md

With ``--against`` both checkouts are timed in the same run, file by file,
alternating, and the table shows the ratio (this / other), so a change in
the suite's speed is measured, not remembered. A test file only one side has
shows ``-`` on the other.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

from fuzz.measurements import recording

_SUMMARY = re.compile(r"^=*\s*(\d+ (?:passed|failed|error).*) in [\d.]+s", re.MULTILINE)


def _run(root: str, args: list[str]) -> tuple[float, str]:
    """Seconds of wall time and pytest's closing line, for ``args`` in ``root``."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(root)}  # its fuzz/, not ours
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "--hypothesis-profile=ci", "-q",
                           *args], cwd=root, env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    found = _SUMMARY.findall(proc.stdout)
    return seconds, (found[-1] if found else f"exit {proc.returncode}")


def _files(root: str) -> list[str]:
    tests = os.path.join(root, "tests")
    return sorted(f"tests/{n}" for n in os.listdir(tests)
                  if n.startswith("test_") and n.endswith(".py"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.bench_suite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="another checkout of this project, timed side by side")
    parser.add_argument("--files", nargs="*", help="only these test files (tests/NAME.py)")
    parser.add_argument("--write-docs", action="store_true",
                        help="also write the table into its section of docs/measurements.md")
    args = parser.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = [here] + ([args.against] if args.against else [])
    for root in roots[1:]:
        if not os.path.isdir(os.path.join(root, "tests")):
            parser.error(f"--against {root}: no tests/ folder there")
    files = args.files or sorted(set().union(*(_files(r) for r in roots)))
    shown = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--write-docs"]
    with recording("bench_suite", args.write_docs, "fuzz.bench_suite", shown):
        _table(roots, files)
    return 0


def _table(roots, files) -> None:
    print(f"{'test file':<32} " + " | ".join(f"{r:<50}" for r in roots)
          + ("  ratio" if len(roots) == 2 else ""), flush=True)
    for name in files:
        cells = [_run(root, [name]) if os.path.exists(os.path.join(root, name)) else None
                 for root in roots]
        print(_row(name, cells), flush=True)
    whole = [_run(root, ["-n", "auto"]) for root in roots]
    print(_row("whole suite, -n auto", whole))


def _row(name: str, cells) -> str:
    shown = [f"{c[0]:7.1f}s  {c[1][:40]:<40}" if c else f"{'-':>8}  {'':<40}" for c in cells]
    ratio = ""
    if len(cells) == 2 and all(cells):
        ratio = f"  x{cells[0][0] / cells[1][0]:.2f}"
    return f"{name:<32} " + " | ".join(shown) + ratio


if __name__ == "__main__":
    sys.exit(main())

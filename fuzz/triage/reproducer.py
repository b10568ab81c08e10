"""Standalone reproducers, verified in a fresh interpreter before anyone sees them.

A reproducer is `render.render_check` of the minimized case on one path, under
a short header: it uses public API only (``jax``, ``numpy``,
``jax.experimental.pallas`` and ``.tpu``), except on the ``abstract`` path,
which needs JAX internals and says so. It prints what happened and what was
expected and exits 1 when the bug reproduces, 0 when it does not.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time

from fuzz import ir, paths
from fuzz.oracles.base import Comparison
from fuzz.triage import render

TIMEOUT_S = 180

_HEADER = '''\
# Reproducer for discharge-fuzz finding {id}.
# Runs the kernel below on the `{path}` path and compares the result with what
# a correct JAX gives. Exit status: 1 = the bug reproduces, 0 = it does not.
{internal}'''
# A reproducer of a hang stops itself: it prints where every thread is stuck
# and exits 1 (faulthandler); one of a crash prints where the process died.
# (One line: a hang's snippet opens with it too.)
WATCHDOG = ("import faulthandler; faulthandler.dump_traceback_later({limit:g}, exit=True)"
            "  # a hang: after {limit:g} s, print where it is stuck and exit 1")
_CRASH = "import faulthandler\nfaulthandler.enable()  # a crash: print where the process died\n"
_INTERNAL = ("# NOTE: the `abstract` path discharges without evaluating, which only JAX\n"
             "# internals (jax._src) can do: the failure lives there.\n")


def script(case: ir.Case, path: str, finding_id: str = "(unfiled)", *, values=None,
           jit: bool = False, fatal: bool = False, watchdog_s: float | None = None,
           comparison: dict | None = None, plain: bool = False) -> str:
    """The reproducer's text; that of a ``fatal`` failure (the process dying
    is the bug) prints where it died, and with ``watchdog_s``, a hang's,
    stops itself after that long. With ``comparison`` (an oracle's
    `fuzz.oracles.base.Comparison`, as a dict) it runs both sides of what
    the oracle compared instead of checking against a correct JAX's values."""
    header = _HEADER.format(id=finding_id, path=path,
                            internal=_INTERNAL if paths.fact(path, "INTERNAL") else "")
    if watchdog_s:
        header += WATCHDOG.format(limit=watchdog_s) + "\n"
    elif fatal:
        header += _CRASH
    if comparison is not None:
        return header + render.render_comparison(case, path, Comparison(**comparison))
    return header + render.render_check(case, path, values=values, jit=jit, plain=plain)


def for_failure(case: ir.Case, path: str, failure, finding_id: str = "(unfiled)",
                comparison: dict | None = None, plain: bool = False) -> str:
    """The reproducer of ``failure`` on ``path``: with the model's values where
    its oracle is about wrong values, under jit where only jit shows it, or
    as its oracle compared (``comparison``, `comparison_of`); in the path's
    plain form with ``plain``."""
    return rendered(case, path, finding_id, **rendering_of(failure), comparison=comparison,
                    plain=plain)


def comparison_of(failure, case: ir.Case, path: str) -> dict | None:
    """How ``failure``'s oracle compared ``case`` on ``path``, as a dict (None:
    it compares with a correct JAX's values, or cannot show it there)."""
    how = getattr(failure, "comparison", None)
    try:
        found = how(case, path) if how is not None else None
    except Exception:  # noqa: BLE001 - the path cannot run it: no reproducer there
        return None
    return dataclasses.asdict(found) if found is not None else None


def rendering_of(failure) -> dict:
    how = {"values": bool(failure.wrong_value), "jit": bool(failure.under_jit)}
    if failure.fatal:   # a crash, or a hang with as long as the campaign waited
        how["fatal"] = True
        how["watchdog_s"] = getattr(failure, "limit_s", None)
    return how


def rendered(case: ir.Case, path: str, finding_id: str, *, values: bool, jit: bool,
             fatal: bool = False, watchdog_s: float | None = None,
             comparison: dict | None = None, plain: bool = False) -> str:
    """The reproducer rendered as `rendering_of` says (``values``: compare
    with the model's values), on this JAX release: `fuzz.triage.bisect` renders a
    filed one again on each release this way."""
    return script(case, path, finding_id,
                  values=render.model_values(case, path) if values and comparison is None
                  else None, jit=jit, fatal=fatal, watchdog_s=watchdog_s, comparison=comparison,
                  plain=plain)


def died(result: dict) -> bool:
    """Whether `check_script`'s interpreter hung or was killed by a signal."""
    return result["status"] == "timeout" or (result["exit_code"] or 0) < 0


def check_script(text: str, *, prelude: str | None = None, timeout: float = TIMEOUT_S) -> dict:
    """Run a reproducer in a fresh interpreter (same executable, clean
    environment, an empty working directory, isolated mode so nothing of this
    checkout is importable). ``prelude`` runs first in that interpreter.

    Returns ``{"status": "reproduces" | "does not reproduce" | "broken" |
    "timeout", "exit_code", "output", "error", "seconds"}``; "timeout" also
    when the script's own watchdog stopped it (its output: where it was stuck)."""
    with tempfile.TemporaryDirectory(prefix="discharge-fuzz-repro-") as tmp:
        path = os.path.join(tmp, "reproducer.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        runner = f"{prelude or ''}\nimport runpy\nrunpy.run_path({path!r}, run_name='__main__')\n"
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp,
               "LANG": "C.UTF-8"}
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-I", "-c", runner], cwd=tmp, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "exit_code": None, "output": "",
                    "error": None, "seconds": round(time.perf_counter() - start, 2)}
    seconds = round(time.perf_counter() - start, 2)
    lines = proc.stdout.strip().splitlines()
    verdict = _verdict(lines[-1]) if lines else None
    shown = "\n".join(line for line in lines[:-1])
    if verdict is None and _WATCHDOG_FIRED in proc.stderr:
        status = "timeout"
        shown = proc.stderr[proc.stderr.index(_WATCHDOG_FIRED):][:3000]
    elif verdict is None or proc.returncode not in (0, 1):
        status = "broken"  # the script itself did not run to its verdict
        shown = (proc.stdout + proc.stderr)[-3000:]
    else:
        status = "reproduces" if proc.returncode == 1 else "does not reproduce"
    # (where a function was defined, in words JAX prints, is the same from run to run)
    shown = shown.replace(path, os.path.basename(path))
    return {"status": status, "exit_code": proc.returncode, "output": shown,
            "error": verdict.get("error") if verdict else None, "seconds": seconds}


# What faulthandler.dump_traceback_later writes first when it fires.
_WATCHDOG_FIRED = "Timeout ("


def _verdict(line: str) -> dict | None:
    try:
        verdict = json.loads(line)
    except json.JSONDecodeError:
        return None
    return verdict if isinstance(verdict, dict) and "reproduced" in verdict else None


def rendering(repro: dict) -> dict:
    """How a filed reproducer (a finding record's ``reproducer``) was
    rendered: ``{"values", "jit", "plain"}``, as `for_failure` and `best`
    chose them. Records filed before it kept them say it in their script,
    read back here."""
    if "render" in repro:
        return repro["render"]
    script = repro.get("script") or ""
    return {"values": '"values"' in script.split("EXPECTED = ", 1)[-1][:200],
            "jit": "the bug shows under jit only" in script}   # (its comment, in either form)


def candidate_paths(case: ir.Case, affected) -> list[str]:
    """Paths a reproducer may use: the public ones a path module ranks
    (``PUBLIC_RANK``) first, where the bug was seen first (a public path
    often shows what the internal one saw), then any other the bug was seen
    on (``tpu_interpret_eager``: only its options may show it), then the
    ranked ones it was not seen on, then those that need JAX internals
    (``INTERNAL``) last."""
    public = sorted(paths.having("PUBLIC_RANK"), key=lambda p: paths.fact(p, "PUBLIC_RANK"))
    internal = paths.having("INTERNAL")
    ordered = ([p for p in public if p in affected]
               + [p for p in affected if p in paths.MODULES and p not in (*public, *internal)]
               + [p for p in public if p not in affected] + list(internal))
    return [p for p in ordered if not paths.not_applicable(case, p)]


def best(case: ir.Case, affected, failure, *, verify: bool = True,
         prelude: str | None = None, finding_id: str = "(unfiled)") -> dict:
    """The first reproducer (public paths first) that reproduces ``failure``
    in a fresh interpreter: ``{"path", "script", "status", ...}``. Without
    ``verify`` the first candidate is rendered and marked "not verified"; when
    none reproduces the last tried is returned, status "does not reproduce"
    (reported as flaky, never filed)."""
    candidates = candidate_paths(case, affected)
    # An oracle that compares two runs is shown on a path it ran there.
    comparisons = {p: comparison_of(failure, case, p) for p in candidates}
    if any(comparisons.values()):
        candidates = [p for p in candidates if comparisons[p]]
    if not candidates:
        return {"path": None, "script": None, "status": "no renderable path"}
    wanted = type(failure.error).__name__ if (
        failure.error is not None and failure.error_is_the_symptom) else None
    # How it was rendered, so that another JAX release renders and judges
    # the same reproducer (fuzz/triage/bisect.py: against the error it saw here).
    how = {"render": rendering_of(failure), "fatal": bool(failure.fatal)}
    if getattr(failure, "limit_s", None):   # a hang: as long as the campaign waited
        how["timeout_s"] = failure.limit_s
    if not verify:
        path = candidates[0]
        return {"path": path, "status": "not verified", **how, "comparison": comparisons[path],
                "script": for_failure(case, path, failure, finding_id, comparisons[path])}
    # On each path its plain form first (``PLAIN``: the program as a user
    # writes it), where the bug shows so too.
    ways = [(path, plain) for path in candidates for plain in
            ((True, False) if paths.fact(path, "PLAIN") and not comparisons[path] else (False,))]
    result = None
    for path, plain in ways:
        text = for_failure(case, path, failure, finding_id, comparisons[path], plain=plain)
        result = {"path": path, "script": text, **how, "comparison": comparisons[path],
                  "render": {**how["render"], "plain": plain},
                  # (a little past a hang's watchdog, so that it says where it was stuck)
                  **check_script(text, prelude=prelude,
                                 timeout=how["timeout_s"] + 15 if "timeout_s" in how else TIMEOUT_S)}
        if failure.fatal:  # the interpreter dying or hanging is the bug
            result["status"] = "reproduces" if died(result) else "does not reproduce"
        elif result["status"] == "reproduces" and result["error"] != wanted and (
                wanted is not None or path not in affected):
            # It fails, but not the same way: another error, or (on a path
            # it was not seen on) an error for a wrong value, which is that
            # path's own bug (pallas_call refusing add=True is no sign of the
            # TPU interpreter ignoring it).
            result["status"] = "does not reproduce"
        if result["status"] == "reproduces":
            return result
    return result


"""JAX releases and one cached environment per release, for `fuzz.triage.bisect`.

This runs in the fuzzer's own environment and builds the others. An
environment is ``<cache>/jax-<release>-py<python>``: the release's ``jax``
and ``jaxlib`` (and what the fuzzer's modules import),
created by ``uv`` (seconds; `fuzz.bench_releases` measures it against
``venv`` + ``pip``), or by ``venv`` + ``pip`` where uv is missing. The
fuzzer itself is not installed there: `fuzz.triage.bisect` puts this checkout on
the environment's path, so every release runs today's code.

Example::

    env = environment("0.6.2")      # created once, then reused
    subprocess.run([env.python, "-c", "import jax; print(jax.__version__)"])
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass

from fuzz import compat

FLOOR = compat.FLOOR
# Every JAX release on PyPI from the floor on, oldest first. A new release
# is added here; `--releases` may name one not yet listed.
KNOWN = ("0.6.2", "0.7.0", "0.7.1", "0.7.2", "0.8.0", "0.8.1", "0.8.2", "0.8.3",
         "0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0", "0.10.1", "0.10.2",
         "0.11.0", "0.11.1", "0.11.2", "0.12.0", "0.12.0.1", "0.12.1")
# Imported by fuzz's modules besides JAX; absl-py is one some releases import
# without declaring it (0.6.0, 0.9.2).
EXTRAS = ("numpy", "hypothesis", "absl-py")
READY = "ready.json"


class ReleaseError(ValueError):
    """A release that cannot be used: not a version, below the floor, or
    no environment could be made for it. The message is one line."""


def check(text: str) -> str:
    """``text`` if it names a release the fuzzer supports, else ReleaseError."""
    try:
        version = compat.parse_release(text)
    except ValueError as e:
        raise ReleaseError(str(e)) from None
    if version < FLOOR:
        raise ReleaseError(f"JAX {text} is older than the floor {'.'.join(map(str, FLOOR))} "
                           "(the first with pl.semaphore_signal, pl.run_state and "
                           "pltpu.InterpretParams)")
    return text.strip()


def steady(text: str) -> str:
    """``text``, as a release said it, without what differs from run to run
    (object addresses, ids), so that measuring again rewrites nothing."""
    return re.sub(r"\b(0x[0-9a-f]{6,}|(?<=id=)\d+)", "…", text)


def ordered(releases) -> list[str]:
    return sorted({check(r) for r in releases}, key=compat.parse_release)


def python_of(release: str) -> str:
    """The Python a release runs on here: 3.11 up to 0.10.x, 3.12 from 0.11."""
    return "3.11" if compat.parse_release(release)[:2] <= (0, 10) else "3.12"


def interpreter(python: str) -> str:
    """The path of a ``python3.X`` on this machine: on PATH, or one pyenv
    installed (whose shims answer only for the selected version)."""
    roots = [os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))]
    candidates = [shutil.which(f"python{python}")] + sorted(
        glob.glob(os.path.join(roots[0], "versions", f"{python}*", "bin", f"python{python}")),
        reverse=True)
    for path in candidates:
        if path and subprocess.run([path, "-c", "pass"], capture_output=True).returncode == 0:
            return path
    raise ReleaseError(f"no Python {python} found (on PATH or under {roots[0]}/versions)")


def default_cache() -> str:
    base = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    return os.path.join(base, "discharge-fuzz", "jax-envs")


def uv_binary() -> str | None:
    """uv, if installed (the ``uv`` package puts it beside this Python)."""
    try:
        import uv  # optional: uv may be installed as a package or only on PATH
        return uv.find_uv_bin()
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


@dataclass(frozen=True)
class Environment:
    release: str
    root: str

    @property
    def python(self) -> str:
        return os.path.join(self.root, "bin", "python")


def requirements(release: str) -> list[str]:
    return [f"jax=={release}", f"jaxlib=={release}", *EXTRAS]


def create(release: str, root: str, tool: str = "auto", log=None) -> dict:
    """Make the environment of ``release`` at ``root`` (which must not
    exist) with ``tool`` ("uv", "pip", or "auto": uv where installed).
    Returns what it did: tool, seconds, versions."""
    python = interpreter(python_of(release))
    uv = uv_binary() if tool in ("auto", "uv") else None
    if tool == "uv" and uv is None:
        raise ReleaseError("--env-tool uv: uv is not installed (pip install uv)")
    start = time.perf_counter()
    if uv is not None:
        steps = [[uv, "venv", "-q", "-p", python, root],
                 [uv, "pip", "install", "-q", "-p", os.path.join(root, "bin", "python"),
                  *requirements(release)]]
    else:
        steps = [[python, "-m", "venv", root],
                 [os.path.join(root, "bin", "python"), "-m", "pip", "install", "-q",
                  "--disable-pip-version-check", *requirements(release)]]
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True)
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
            raise ReleaseError(f"JAX {release}: {os.path.basename(step[0])} failed: {last}")
    return {"release": release, "tool": "uv" if uv else "pip", "python": python_of(release),
            "seconds": round(time.perf_counter() - start, 2)}


def environment(release: str, cache: str | None = None, tool: str = "auto") -> Environment:
    """The cached environment of ``release``, created if missing. It is
    built beside its final place and moved there once ready, so an
    interrupted build leaves nothing that looks usable (``bin/python -m``
    works from anywhere: the fuzzer never runs the scripts in ``bin/``)."""
    release = check(release)
    cache = cache or default_cache()
    root = os.path.join(cache, f"jax-{release}-py{python_of(release)}")
    env = Environment(release, root)
    if os.path.exists(os.path.join(root, READY)):
        return env
    os.makedirs(cache, exist_ok=True)
    building = root + ".building"
    shutil.rmtree(building, ignore_errors=True)   # a build that never finished
    try:
        done = create(release, building, tool)
        with open(os.path.join(building, READY), "w", encoding="utf-8") as f:
            json.dump(done, f)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    shutil.rmtree(root, ignore_errors=True)
    os.replace(building, root)
    return env

"""Measured figures live in ``docs/measurements.md``, not in the README; a
benchmark script run with ``--write-docs`` rewrites its own section there.

A section is the text between two HTML comments, which Markdown does not
show::

    <!-- begin: bench_suite -->
    ...replaced on each write...
    <!-- end: bench_suite -->

Everything outside the markers (the markers themselves included) is kept
byte for byte. Standard library and ``fuzz.atomic`` only: no JAX import (the
JAX version is read from the installed package's metadata).
"""
from __future__ import annotations

import contextlib
import datetime
import importlib.metadata
import io
import shlex
import subprocess
import sys
from pathlib import Path

from fuzz import atomic

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "measurements.md"
FLAG = "--write-docs"


class SectionError(ValueError):
    """A section's markers are missing, doubled or out of order."""


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- begin: {name} -->", f"<!-- end: {name} -->"


def _span(name: str, text: str, path) -> tuple[int, int]:
    """Where the section's body starts (just after its begin marker) and
    ends (at its end marker)."""
    for marker in _markers(name):
        if (n := text.count(marker)) != 1:
            raise SectionError(f"{path}: section {name!r}: "
                               + (f"no '{marker}' marker" if n == 0 else
                                  f"'{marker}' appears {n} times"))
    begin, end = _markers(name)
    start, stop = text.index(begin) + len(begin), text.index(end)
    if stop < start:
        raise SectionError(f"{path}: section {name!r}: '{end}' comes before '{begin}'")
    return start, stop


def _read(name: str, path: Path) -> tuple[str, int, int]:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise SectionError(f"{path}: no such file (looking for section {name!r})") from None
    return (text, *_span(name, text, path))


def check_section(name: str, path=None) -> None:
    """Raise ``SectionError`` now, not after an hour of measuring, when
    ``name`` has no section to write into."""
    _read(name, Path(path or DOCS))


def write_section(name: str, markdown: str, path=None) -> Path:
    """Replace what lies between ``name``'s markers in ``path`` (default
    ``docs/measurements.md``) with ``markdown``, atomically; the rest of the
    file stays byte-identical."""
    path = Path(path or DOCS)
    text, start, stop = _read(name, path)
    return atomic.write_text(path, text[:start] + "\n" + markdown.strip("\n") + "\n"
                             + text[stop:])


def _jax_version() -> str:
    try:
        return importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _commit() -> str:
    """This checkout's commit, and whether its tree had changes; '' outside git."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=30)
    try:
        head = git("rev-parse", "--short", "HEAD")
        if head.returncode:
            return ""
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"commit {head.stdout.strip()}" + (" with uncommitted changes" if dirty else "")


def section(printed: str, command: str) -> str:
    """What goes between the markers: how, when and on what it was measured,
    then the script's output as it printed it."""
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    where = ", ".join(x for x in (f"JAX {_jax_version()}", _commit(), date) if x)
    return f"`{command}` ({where}):\n\n```text\n{printed.strip(chr(10))}\n```"


def take_flag(argv) -> tuple[list[str], bool]:
    """``argv`` without ``--write-docs``, and whether it was there (for the
    scripts that read their arguments by hand)."""
    argv = list(argv)
    return [a for a in argv if a != FLAG], FLAG in argv


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for stream in self.streams:
            stream.write(s)
        return len(s)

    def flush(self):
        for stream in self.streams:
            stream.flush()


@contextlib.contextmanager
def recording(name: str, enabled: bool, module: str, argv=(), path=None):
    """Print as usual; when ``enabled``, check ``name``'s section first and,
    if the body finishes, write what it printed to stdout into the section
    with the command line (``python -m MODULE ARGV``), the JAX version, the
    commit and the date."""
    if not enabled:
        yield
        return
    try:
        check_section(name, path)
    except SectionError as e:   # before measuring: one line, exit 2 as for bad usage
        print(f"error: {FLAG}: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    printed = io.StringIO()
    with contextlib.redirect_stdout(_Tee(sys.stdout, printed)):
        yield
    command = " ".join(["python -m", module, *map(shlex.quote, argv)])
    written = write_section(name, section(printed.getvalue(), command), path)
    print(f"wrote section {name!r} of {written}", file=sys.stderr)

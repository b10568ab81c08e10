"""Atomic file writes: a killed process leaves the old file or the new one,
never half of one. Temp file in the same directory (same file system), then
``os.replace``, which POSIX makes atomic."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

_UMASK = os.umask(0)
os.umask(_UMASK)


def write_text(path, text: str, *, durable: bool = False) -> Path:
    """Write ``text`` to ``path`` atomically. ``durable`` also fsyncs, for
    files that must survive a machine crash, not just a process crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_UMASK)   # mkstemp makes it 0600; give it what open() would
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path

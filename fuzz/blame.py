"""Which statement of a case a failure is about.

A live kernel is compiled from its source under a file name of its own
(`fuzz.emit.live_kernel`), and every line of that source is one statement.
So a failure is pinned to a statement from what JAX was doing when it broke:
a frame of the kernel itself (an error while tracing), or the equation being
discharged or lowered (an error, or a wrong value a probe saw, in a rule),
whose recorded traceback passes through the kernel's line. Known findings
match only on the statement that has their trigger (`fuzz.suppressions.known_findings`).
"""
from __future__ import annotations

import sys

from fuzz import emit

_PREFIX = emit.FILENAME.split("{")[0]


def of_traceback(traceback) -> int | None:
    """The innermost kernel statement in a JAX (jaxlib) traceback."""
    found = None
    for frame in getattr(traceback, "frames", ()):
        if frame.file_name.startswith(_PREFIX):
            found = emit.statement_at(frame.file_name, frame.line_num)
            break   # innermost first
    return found


def _of_frame(frame) -> int | None:
    if frame.f_code.co_filename.startswith(_PREFIX):
        return emit.statement_at(frame.f_code.co_filename, frame.f_lineno)
    eqn = frame.f_locals.get("eqn")
    source = getattr(eqn, "source_info", None)
    return of_traceback(source.traceback) if source is not None else None


def of_error(error: BaseException | None) -> int | None:
    """The innermost statement the traceback of ``error`` passed through."""
    found = None
    tb = error.__traceback__ if error is not None else None
    while tb is not None:
        k = _of_frame(tb.tb_frame)
        found = k if k is not None else found
        tb = tb.tb_next
    return found


def current() -> int | None:
    """The statement of the equation JAX is discharging or lowering now, from
    the calling frames (a probe calls this inside a discharge rule)."""
    frame = sys._getframe(1)
    while frame is not None:
        if (k := _of_frame(frame)) is not None:
            return k
        frame = frame.f_back
    return None

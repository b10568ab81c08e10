"""Which statement of a case a failure is about.

`emit` runs statement ``k`` of a kernel under ``jax.named_scope("stmtk")``, so
every equation it traces carries that scope in its name stack. A failure is
pinned to a statement from what JAX was doing when it broke: the emit loop
(an error while tracing) or the equation being discharged or lowered (an
error, or a wrong value a probe saw, in a rule). Known findings match only on
the statement that has their trigger (`fuzz.known_findings`).
"""
from __future__ import annotations

import re
import sys

SCOPE = "stmt{}"
_SCOPE = re.compile(r"(?:^|/)stmt(\d+)(?:/|$)")


def of_name_stack(name_stack) -> int | None:
    """The statement whose scope is innermost in ``name_stack`` (str-able)."""
    found = _SCOPE.findall(str(name_stack))
    return int(found[-1]) if found else None


def _of_frame(frame) -> int | None:
    local = frame.f_locals
    if frame.f_code.co_name == "run_statements" and isinstance(local.get("k"), int):
        return local["k"]
    eqn = local.get("eqn")
    source = getattr(eqn, "source_info", None)
    return of_name_stack(source.name_stack) if source is not None else None


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

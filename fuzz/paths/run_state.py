"""``run_state``: ``pl.run_state`` of the kernel, evaluated eagerly over
arrays (int16 ones standing in for semaphores), the frame (``dyn``,
``out``) among them only where the kernel uses it."""
from __future__ import annotations

from fuzz import ir, paths

NAME, COST, EVALUATES = "run_state", 2, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "in `pl.run_state`"
CONTEXT = "refs"   # refs as values, no Pallas kernel around them
SEMAPHORES = "stand-in"   # it takes arrays: an int16 one stands in for a semaphore
RERUN = JIT = GRAD = True
PUBLIC_RANK = 3   # pl.run_state: Pallas, experimental

_HARNESS = '''\
def function():
    """The program as a function, and its arguments."""
    return pl.run_state(lambda refs: kernel({call})), (({frame}{refs}),)
'''
# The frame refs, each only where the kernel uses it: ``dyn`` where it has
# dynamic operands, ``out`` where it reads a semaphore (else None for it).
_FRAME = {"dyn": "DYN", "out": "jnp.zeros(OUT, jnp.int32)"}


def _frame(case: ir.Case) -> list[str]:
    return [n for n, used in (("dyn", case.dynamic_values), ("out", case.num_reads)) if used]


def not_applicable(case: ir.Case) -> str | None:
    if any(r.is_semaphore for r in case.refs):
        return "run_state takes arrays; semaphore dtypes exist only as refs"
    if any(r.scoped for r in case.refs):
        return "pl.run_scoped has no evaluation rule outside a kernel"
    return None


def harness(case: ir.Case) -> str:
    frame = _frame(case)
    slot = iter(range(len(frame)))
    passed = [f"refs[{next(slot)}]" if n in frame else "None" for n in _FRAME]
    call = "*refs" if len(frame) == len(_FRAME) else ", ".join(
        [*passed, f"*refs[{len(frame)}:]" if frame else "*refs"])
    return _HARNESS.format(call=call, frame="".join(f"{_FRAME[n]}, " for n in frame), refs="".join(
        f"{paths.initial_source(case, i)}, " for i in paths.unscoped(case)))


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    frame = _frame(case)
    return ([r for r in paths.frame_results(case) if r[0] in frame]
            + paths.ref_results(case, paths.unscoped(case)))


def model_results(case: ir.Case, meaning) -> list | None:
    frame = {"dyn": paths.dyn(case).tolist(), "out": paths.padded_reads(case, meaning)}
    return [*(frame[n] for n in _frame(case)), *[meaning.state[i] for i in paths.unscoped(case)]]

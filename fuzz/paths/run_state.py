"""``run_state``: ``pl.run_state`` of the kernel, evaluated eagerly over
arrays (int16 ones standing in for semaphores)."""
from __future__ import annotations

from fuzz import ir, paths

NAME, COST, EVALUATES = "run_state", 2, True
CONTEXT = "refs"   # refs as values, no Pallas kernel around them
SEMAPHORES = "stand-in"   # it takes arrays: an int16 one stands in for a semaphore
RERUN = JIT = GRAD = True
PUBLIC_RANK = 3   # pl.run_state: Pallas, experimental

_HARNESS = '''\
def function():
    """The program as a function, and its arguments."""
    return pl.run_state(lambda refs: kernel(*refs)), ((DYN, jnp.zeros(OUT, jnp.int32), {refs}),)
'''


def not_applicable(case: ir.Case) -> str | None:
    if any(r.is_semaphore for r in case.refs):
        return "run_state takes arrays; semaphore dtypes exist only as refs"
    if any(r.scoped for r in case.refs):
        return "pl.run_scoped has no evaluation rule outside a kernel"
    return None


def harness(case: ir.Case) -> str:
    return _HARNESS.format(refs="".join(
        f"{paths.initial_source(case, i)}, " for i in paths.unscoped(case)))


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    return paths.frame_results(case) + paths.ref_results(case, paths.unscoped(case))


def model_results(case: ir.Case, meaning) -> list | None:
    return [paths.dyn(case).tolist(), paths.padded_reads(case, meaning),
            *[meaning.state[i] for i in paths.unscoped(case)]]

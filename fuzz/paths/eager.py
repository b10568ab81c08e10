"""``eager``: the program of `jax_refs` run eagerly, without ``jax.jit``:
``jax.new_ref`` makes concrete mutable arrays and each ref operation runs
on them as it is called: JAX compiles the one primitive alone (its own
discharge rule, on one ref), so the whole-program discharge the other paths
run (the jit and remat2 rules, a chain of statements discharged together)
never happens. A cheap path to compare them with. Only data programs:
semaphores exist only in kernels."""
from __future__ import annotations

import jax

from fuzz import compat, emit, ir
from fuzz.paths import jax_refs

NAME, COST, EVALUATES = "eager", 2, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "on `jax.new_ref` arrays outside `jax.jit` (each primitive run alone)"
CONTEXT = "eager"   # refs as values, each primitive run alone
VMAP = GRAD = True
NEEDS = ("jax.new_ref", "jax.freeze")   # no jax.empty_ref eagerly


def not_applicable(case: ir.Case) -> str | None:
    """Also what an eager ``jax.Ref`` lacks (under jit a traced ref has it):
    valid and invalid programs alike would stop there, before their meaning
    or their mistake."""
    if why := jax_refs.not_applicable(case):
        return why
    if why := next((why for s in case.statements if (why := refused(case, s))), None):
        return why
    # (only a view the kernel writes as x.at[...]: x[i] and jax.ref.get(x, i) run)
    if compat.jax_version()[:2] < (0, 12) and ".at[" in emit.kernel_source(case):
        return f"JAX {jax.__version__}'s eager jax.Ref has no .at[] (a bare NotImplementedError)"
    return None


def refused(case: ir.Case, stmt: ir.Statement) -> str | None:
    """Why this path cannot run statement ``stmt`` of ``case`` (None: it
    can): what `fuzz.paths.projected` drops, so that the rest of a program
    it refuses still runs here (most drawn programs have one of these)."""
    if stmt.counted() or any(case.refs[v.ref].is_semaphore for v in ir.views(stmt)):
        return jax_refs.REFUSED_SEMAPHORES
    if any(case.refs[v.ref].scoped for v in ir.views(stmt)):
        return jax_refs.REFUSED_SCOPED
    if stmt.primitive in ("masked_load", "masked_swap"):
        return "pltpu.load / pltpu.store have no eager evaluation rule"
    if any(isinstance(t, (ir.Reshape, ir.Transpose, ir.Bitcast))
           for v in ir.views(stmt) for t in v.transforms):
        return "an eager jax.Ref has no .reshape / .transpose / .bitcast"
    return None


def harness(case: ir.Case) -> str:
    return jax_refs.harness(case, jit=False)


results, model_results = jax_refs.results, jax_refs.model_results
written_out = jax_refs.body   # `fuzz.paths.function_source`


def vmap_batches(k: int) -> bool:
    """Whether vmap-stack batches operand ``k`` (after ``dyn``): all are. A
    ``jax.new_ref`` made inside vmap from an unbatched value cannot take
    batched writes (JAX says so)."""
    return True

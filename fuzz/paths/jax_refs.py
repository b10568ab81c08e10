"""``jax_refs``: refs as values under ``jax.jit``, as JAX programs use state
outside Pallas: ``jax.new_ref`` of each input, the kernel called through
an inner ``jax.jit`` of a ``jax.checkpoint`` that take the refs (the
``jit`` and ``remat2`` discharge rules), then ``jax.freeze``. JAX
discharges the whole program when jit lowers it. Only data programs:
semaphores exist only in kernels. Its ``plain`` form calls the kernel
directly, as a user writes it: a reproducer tries it first."""
from __future__ import annotations

from fuzz import ir, paths

NAME, COST, EVALUATES = "jax_refs", 2, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "on `jax.new_ref` arrays under `jax.jit`"
CONTEXT = "refs"   # refs as values under jax.jit, no Pallas kernel
PUBLIC_RANK = 2   # jax.new_ref under jax.jit: top-level JAX API
PLAIN = True   # `harness(case, plain=True)`: no wrapper of the path's own
NEEDS = ("jax.new_ref", "jax.freeze")   # fuzz.compat features

_HARNESS = '''\
def program(dyn, {params}):
{body}

def function():
    """The program as a function, and its arguments."""
    return {program}, (DYN, {inputs})
'''

# The call that takes the refs under jit: an inner ``jax.jit`` of a
# ``jax.checkpoint`` (the jit and remat2 discharge rules, for every case).
CALL = "jax.jit(jax.checkpoint(kernel))"
# ``out`` is no result here: only a semaphore read writes it, and this
# path takes no semaphores. The kernel gets ``None`` for it, and for ``dyn``
# where it has no dynamic operands: eagerly each jax.new_ref runs as it is
# made, and one made unread must not change what the program does
# (eager-jvp-of-integer-new-ref: of an int32 array, it did).
_UNUSED = "None"


def body(case: ir.Case, values: dict[str, str], results: list[str], call: str = "kernel") -> str:
    """The program's body, written out around the kernel: a ``jax.new_ref``
    of each operand it uses (of ``values``: each parameter's source by name,
    ``dyn`` and ``x0``, ...), the kernel called through ``call``, then
    ``jax.freeze`` of ``results`` (ref names). The ``eager`` path's
    ``written_out`` (`paths.function_source`) too."""
    made = {**({"dyn": "dyn"} if case.dynamic_values else {}),
            **{f"r{i}": f"x{i}" for i in paths.unscoped(case)}}
    return (f"    {', '.join(made)} = {', '.join(f'jax.new_ref({values[x]})' for x in made.values())}\n"
            f"    {call}({'dyn' if case.dynamic_values else _UNUSED}, {_UNUSED}, "
            f"{', '.join(f'r{i}' for i in paths.unscoped(case))})\n"
            f"    return {paths.tuple_source(f'jax.freeze({n})' for n in results)}\n")


# Why a program of refs as values cannot have some of a kernel's refs.
REFUSED_SEMAPHORES = "semaphores (and the copies counted on them) exist only inside Pallas kernels"
REFUSED_SCOPED = "pl.run_scoped exists only inside Pallas kernels"


def not_applicable(case: ir.Case) -> str | None:
    if any(r.is_semaphore for r in case.refs) or any(s.counted() for s in case.statements):
        return REFUSED_SEMAPHORES
    if any(r.scoped for r in case.refs):
        return REFUSED_SCOPED
    return None


def arguments(case: ir.Case) -> dict[str, str]:
    """The program's parameters for the refs' initial contents, and those contents."""
    refs = paths.unscoped(case)
    return {"params": ", ".join(f"x{i}" for i in refs),
            "inputs": "".join(f"{paths.initial_source(case, i)}, " for i in refs)}


def harness(case: ir.Case, *, jit: bool = True, call: str = CALL, plain: bool = False) -> str:
    """The program under jit, the kernel called through ``call``; with
    ``plain``, called directly (the program as a user writes it: a
    reproducer's first choice); with ``jit=False`` the same program run
    eagerly (the ``eager`` path)."""
    args = arguments(case)
    values = {"dyn": "dyn", **{f"x{i}": f"x{i}" for i in paths.unscoped(case)}}
    refs = [n for n, _ in results(case)]
    text = body(case, values, refs, call="kernel" if plain or not jit else call)
    return _HARNESS.format(params=args["params"], inputs=args["inputs"], body=text.rstrip("\n"),
                           program="jax.jit(program)" if jit else "program")


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    return paths.ref_results(case, paths.unscoped(case))


def model_results(case: ir.Case, meaning) -> list | None:
    return [meaning.state[i] for i in paths.unscoped(case)]

"""``pallas_call``: ``pl.pallas_call(..., interpret=True)`` (the HLO
interpreter, which discharges the whole kernel). Semaphores, and int16 refs
standing in for them, are scratch (or ``pl.run_scoped`` inside the kernel);
data refs are inputs copied into outputs as the kernel starts (an output
block is not loaded from memory, even when aliased to an input, so reading
one unwritten has no defined value), so their final contents come back."""
from __future__ import annotations

from fuzz import emit, ir, model, paths

NAME, COST, EVALUATES = "pallas_call", 3, True
INTERPRET = "True"

_HARNESS = '''\
def pallas_kernel({params}):
{copies}    kernel(dyn, out, {refs})


def function():
    """The program as a function, and its arguments."""
    call = pl.pallas_call(
        pallas_kernel,
        out_shape=(jax.ShapeDtypeStruct(OUT, jnp.int32), {out_shapes}),
        scratch_shapes=[{scratch}], interpret={interpret})
    return call, (DYN, {inputs})
'''


def not_applicable(case: ir.Case) -> str | None:
    return None


def operands(case: ir.Case) -> tuple[list[int], list[int]]:
    """(data refs passed in and out, refs allocated as scratch): unscoped
    refs that hold counts (or nothing) are scratch, which starts at 0."""
    data = sorted(model.data_refs(case) & set(paths.unscoped(case)))
    return data, [i for i in paths.unscoped(case) if i not in data]


def harness(case: ir.Case, interpret: str = INTERPRET) -> str:
    data, scratch = operands(case)
    params = ["dyn", *[f"x{i}" for i in data], "out", *[f"r{i}" for i in data],
              *[f"r{i}" for i in scratch]]
    return _HARNESS.format(
        params=", ".join(params),
        copies="".join(f"    r{i}[...] = x{i}[...]\n" for i in data),
        refs="".join(f"r{i}, " for i in paths.unscoped(case)),
        out_shapes="".join(f"jax.ShapeDtypeStruct({tuple(case.refs[i].shape)!r}, "
                           f"{emit.dtype_source(case.refs[i].kind)}), " for i in data),
        scratch=", ".join(emit.allocation_source(case.refs[i]) for i in scratch),
        inputs="".join(f"{paths.initial_source(case, i)}, " for i in data),
        interpret=interpret)


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    return [("out", ((paths.out_len(case),), "int32")),
            *paths.ref_results(case, operands(case)[0])]


def model_results(case: ir.Case, meaning) -> list | None:
    return [paths.padded_reads(meaning), *[meaning.state[i] for i in operands(case)[0]]]


def run(case: ir.Case, wrap=None) -> paths.Outcome:
    fn, args = paths.load(case, NAME)["function"]()
    return paths.evaluate(case, NAME, fn if wrap is None else wrap(fn), args)

"""``pallas_call``: ``pl.pallas_call(..., interpret=True)`` (the HLO
interpreter, which discharges the whole kernel). Semaphores, and int16 refs
standing in for them, are scratch (or ``pl.run_scoped`` inside the kernel);
data refs are inputs copied into outputs as the kernel starts (an output
block is not loaded from memory, even when aliased to an input, so reading
one unwritten has no defined value), so their final contents come back; an
output may alias its input (``input_output_aliases``), and each lives in its
ref's memory space. A scoped data ref's exit is an output of its own."""
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
        scratch_shapes=[{scratch}],{specs} interpret={interpret})
    return call, (DYN, {inputs})
'''


def not_applicable(case: ir.Case) -> str | None:
    return None


def operands(case: ir.Case) -> tuple[list[int], list[int], list[int]]:
    """(data refs passed in and out, scoped data refs' exits, refs allocated
    as scratch): unscoped refs that hold counts (or nothing) are scratch,
    which starts at 0."""
    data = sorted(model.data_refs(case) & set(paths.unscoped(case)))
    return data, emit.exits(case), [i for i in paths.unscoped(case) if i not in data]


def _spec(ref: ir.Ref | None) -> str:
    space = ref is not None and ref.memory_space
    return f"pl.BlockSpec(memory_space={emit.memory_space_source(ref)})" if space else "pl.BlockSpec()"


def _specs(case: ir.Case, data: list[int], exits: list[int]) -> str:
    """The ``in_specs`` / ``out_specs`` (each data ref in its memory space)
    and ``input_output_aliases`` arguments, where any differs from the default."""
    refs = case.refs
    text = ""
    if any(refs[i].memory_space for i in data + exits):
        text += (f"\n        in_specs=[{', '.join(_spec(r) for r in [None, *[refs[i] for i in data]])}],"
                 f"\n        out_specs=({', '.join(_spec(r) for r in [None, *[refs[i] for i in data + exits]])},),")
    if aliases := {1 + k: 1 + k for k, i in enumerate(data) if refs[i].aliased}:
        text += f"\n        input_output_aliases={aliases!r},"
    return text


def harness(case: ir.Case, interpret: str = INTERPRET) -> str:
    data, exits, scratch = operands(case)
    params = ["dyn", *[f"x{i}" for i in data], "out", *[f"r{i}" for i in data],
              *[f"e{i}" for i in exits], *[f"r{i}" for i in scratch]]
    return _HARNESS.format(
        params=", ".join(params),
        copies="".join(f"    r{i}[...] = x{i}[...]\n" for i in data),
        refs="".join(f"r{i}, " for i in paths.unscoped(case)) + "".join(f"e{i}, " for i in exits),
        out_shapes="".join(f"jax.ShapeDtypeStruct({tuple(case.refs[i].shape)!r}, "
                           f"{emit.dtype_source(case.refs[i].kind)}), " for i in data + exits),
        scratch=", ".join(emit.allocation_source(case.refs[i]) for i in scratch),
        specs=_specs(case, data, exits),
        inputs="".join(f"{paths.initial_source(case, i)}, " for i in data),
        interpret=interpret)


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    data, exits, _ = operands(case)
    return [("out", ((paths.out_len(case),), "int32")), *paths.ref_results(case, data + exits)]


def model_results(case: ir.Case, meaning) -> list | None:
    data, exits, _ = operands(case)
    return [paths.padded_reads(meaning), *[meaning.state[i] for i in data + exits]]

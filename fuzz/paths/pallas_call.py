"""``pallas_call``: ``pl.pallas_call(..., interpret=True)`` (the HLO
interpreter, which discharges the whole kernel). Semaphores, and int16 refs
standing in for them, are scratch (or ``pl.run_scoped`` inside the kernel);
data refs are inputs copied into outputs as the kernel starts (an output
block is not loaded from memory, even when aliased to an input, so reading
one unwritten has no defined value), so their final contents come back; an
output may alias its input (``input_output_aliases``), and each lives in its
ref's memory space. A scoped data ref's exit is an output of its own.

A case's grid (`ir.Grid`) becomes the call's: every data operand and exit
holds one block per grid point, its ``BlockSpec`` squeezing the block axis
(``None``) and its index map choosing the block; ``out`` holds one vector
of reads per grid point. With ``prefetch`` the call takes a
``PrefetchScalarGridSpec`` whose scalar-prefetch operand is ``dyn``.

``out`` is an output only where the kernel reads a semaphore (or the call
would have no output at all); the kernel gets None for it elsewhere. The
``plain`` form (a reproducer's first choice) takes ``dyn`` only where the
kernel indexes with it too; the fuzzing form always does, as the first
operand vmap-stack varies."""
from __future__ import annotations

from fuzz import emit, ir, model, paths

NAME, COST, EVALUATES = "pallas_call", 3, True
# A report's words for where the bug showed: the call that ran the program.
SHOWN = "in `pl.pallas_call(..., interpret=True)`"
CONTEXT = "pallas"
SEMAPHORES = "either"
RERUN = VMAP = True
PUBLIC_RANK = 1
PLAIN = True   # `harness(case, plain=True)`: ``dyn`` only where the kernel uses it
GRID = MESH = True
# dma_start_discharge_rule makes a remote start a collective (all_gather over
# the mesh axis: "this code only works in SPMD mode"), so every device's
# kernel is at that start when the copy lands.
LOCKSTEP = True
INTERPRET = "True"

_HARNESS = '''\
def pallas_kernel({params}):
{copies}    kernel({frame}{refs})


def function():
    """The program as a function, and its arguments."""
    call = pl.pallas_call(
        pallas_kernel, interpret={interpret},
        out_shape=({out}{out_shapes}){launch})
    return {call}, ({dyn}{inputs})
'''

# On a mesh: every operand and result stacks one block per device, and
# each device's kernel works on its own (its communication is the
# kernel's, so shard_map checks no varying axes).
_ON_MESH = '''

def on_mesh(call, P=jax.sharding.PartitionSpec):
    """``call`` on each device of a mesh of {devices}, on its block of each operand."""
    return jax.shard_map(lambda {dyn}*blocks: tuple(y[None] for y in call({dyn}*(b[0] for b in blocks))), mesh=jax.sharding.Mesh(jax.devices()[:{devices}], {axis!r}), in_specs={in_specs}, out_specs=P({axis!r}), check_vma=False)
'''


def not_applicable(case: ir.Case) -> str | None:
    return None


def takes_out(case: ir.Case) -> bool:
    """Whether the call has the ``out`` output: where the kernel reads a
    semaphore, or it would have no output else."""
    data, exits, _ = operands(case)
    return bool(case.num_reads or not (data or exits))


def _takes_dyn(case: ir.Case, plain: bool) -> bool:
    """Whether the call takes ``dyn``: always but in the plain form, where
    only a kernel or a prefetching grid that reads it does."""
    return not plain or bool(case.dynamic_values) or bool(case.grid and case.grid.prefetch)


def operands(case: ir.Case) -> tuple[list[int], list[int], list[int]]:
    """(data refs passed in and out, scoped data refs' exits, refs allocated
    as scratch): unscoped refs that hold counts (or nothing) are scratch,
    which starts at 0."""
    data = sorted(model.data_refs(case) & set(paths.unscoped(case)))
    return data, emit.exits(case), [i for i in paths.unscoped(case) if i not in data]


def _spec(ref: ir.Ref | None, grid: ir.Grid | None = None, block: str = "") -> str:
    """The ``BlockSpec`` of an operand: the whole of it (``dyn``, or any
    without a grid), else one block of ``ref``'s shape, the block axis
    squeezed, the one the index map computes (source ``block``)."""
    args = []
    if grid is not None and ref is not None:
        ids = ", ".join(f"i{a}" for a in range(len(grid.shape)))
        index = ", ".join([block, *["0"] * len(ref.shape)]) + ("," if not ref.shape else "")
        args = [repr((None, *ref.shape)), f"lambda {ids}, *prefetch: ({index})"]
    if ref is not None and ref.memory_space:
        args.append(f"memory_space={emit.memory_space_source(ref)}")
    return f"pl.BlockSpec({', '.join(args)})"


def _row_major(grid: ir.Grid, axes) -> str:
    """Source of the row-major number of the program ids ``i<a>`` of ``axes``."""
    text = f"i{axes[0]}"
    for a in axes[1:]:
        text = f"({text}) * {grid.shape[a]} + i{a}"
    return text


def _block(case: ir.Case) -> str:
    """Source of the block a grid point works on (`ir.Grid.blocks`)."""
    grid = case.grid
    if grid.prefetch:
        table = len(paths.dyn(case)) - grid.size   # where dyn's block table starts
        return f"prefetch[0][{table} + {_row_major(grid, range(len(grid.shape)))}]"
    number = _row_major(grid, grid.order)
    return f"{grid.size - 1} - ({number})" if grid.reverse else number


def _launch(case: ir.Case, data: list[int], exits: list[int], scratch: list[int],
            dyn: bool) -> str:
    """The call's arguments after ``out_shape``, each after a comma on a
    line of its own: its grid, scratch, ``in_specs`` / ``out_specs`` (each
    operand in its memory space; with a grid, its blocks) and
    ``input_output_aliases``, where any differs from the default; with a
    prefetching grid, all but the aliases in a ``PrefetchScalarGridSpec``,
    which takes ``dyn`` itself (``dyn``: whether the call takes it)."""
    refs, grid = case.refs, case.grid
    args = [f"scratch_shapes=[{', '.join(emit.allocation_source(refs[i]) for i in scratch)}]"
            ] if scratch else []
    if grid is not None or any(refs[i].memory_space for i in data + exits):
        block = _block(case) if grid else ""
        out = ir.Ref("int32", (paths.out_len(case),))
        ins = [_spec(refs[i], grid, block) for i in data]
        if dyn and (grid is None or not grid.prefetch):
            ins.insert(0, _spec(None))   # dyn's
        outs = [_spec(refs[i], grid, block) for i in data + exits]
        if takes_out(case):
            outs.insert(0, _spec(out, grid, _row_major(grid, range(len(grid.shape))))
                        if grid else _spec(None))
        args += [f"in_specs=[{', '.join(ins)}]", f"out_specs=({', '.join(outs)},)"]
        if grid is not None:
            args.insert(0, f"grid={grid.shape!r}")
        if grid is not None and grid.prefetch:
            args = ["grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, "
                    + ",\n            ".join(args) + ")"]
    first_in, first_out = int(dyn), int(takes_out(case))   # (a prefetched dyn counts too)
    if aliases := {first_in + k: first_out + k for k, i in enumerate(data) if refs[i].aliased}:
        args.append(f"input_output_aliases={aliases!r}")
    if any(r.collective for r in refs):   # get_barrier_semaphore needs one
        args.append("compiler_params=pltpu.CompilerParams(collective_id=0)")
    return "".join(f",\n        {a}" for a in args)


def harness(case: ir.Case, interpret: str = INTERPRET, plain: bool = False) -> str:
    data, exits, scratch = operands(case)
    grid, dyn, out = case.grid, _takes_dyn(case, plain), takes_out(case)
    params = [*["dyn"][:dyn], *[f"x{i}" for i in data], *["out"][:out], *[f"r{i}" for i in data],
              *[f"e{i}" for i in exits], *[f"r{i}" for i in scratch]]
    stacked = [grid.stacked(case.refs[i]) if grid else case.refs[i] for i in data + exits]
    # each device's blocks continue the pattern, as a grid's do
    inputs = [ir.Ref(r.kind, (case.devices, *r.shape)) if case.devices else r
              for r in stacked[:len(data)]]
    mesh = _ON_MESH.format(devices=case.devices, axis=ir.MESH_AXIS, dyn="dyn, " if dyn else "",
                           in_specs=f"(P(), *[P({ir.MESH_AXIS!r})] * {len(data)})" if dyn
                           else f"P({ir.MESH_AXIS!r})") \
        if case.devices else ""
    # ``out`` zeroed (an output block starts undefined: a slot no read
    # writes printed garbage), then the copy-ins, up to 5 to a line, so a
    # snippet keeps its few lines for the kernel
    copies = [f"r{i}[...] = x{i}[...]" for i in data]
    rows = [[*["out[...] = jnp.zeros(out.shape, jnp.int32)"][:out], *copies[:5]],
            *(copies[k:k + 5] for k in range(5, len(copies), 5))]
    return _HARNESS.format(
        params=", ".join(params),
        copies="".join("    " + "; ".join(row) + "\n" for row in rows if row),
        frame=f"{'dyn' if dyn else None}, {'out' if out else None}, ",
        dyn="DYN, " if dyn else "",
        refs="".join(f"r{i}, " for i in paths.unscoped(case)) + "".join(f"e{i}, " for i in exits),
        out=f"jax.ShapeDtypeStruct({f'({grid.size}, *OUT)' if grid else 'OUT'}, jnp.int32), "
        if out else "",
        out_shapes="".join(f"jax.ShapeDtypeStruct({tuple(r.shape)!r}, "
                           f"{emit.dtype_source(r.kind)}), " for r in stacked),
        launch=_launch(case, data, exits, scratch, dyn),
        # data refs all: each starts from the pattern (over a grid, its blocks')
        inputs="".join(f"{emit.value_source(r, i)}, " for i, r in zip(data, inputs)),
        call="on_mesh(call)" if case.devices else "call",
        interpret=interpret) + mesh


def vmap_batches(k: int) -> bool:
    """Whether vmap-stack batches operand ``k`` (after ``dyn``): every other
    one, so batched and unbatched refs meet in one kernel."""
    return k % 2 == 1


def results(case: ir.Case) -> list[tuple[str, paths.Aval]]:
    data, exits, _ = operands(case)
    runs = paths.stacked(case)
    named = [*[("out", ((paths.out_len(case),), "int32"))][:takes_out(case)],
             *paths.ref_results(case, data + exits)]
    if runs is None:
        return named
    return [(name, ((runs, *shape), dtype)) for name, (shape, dtype) in named]


def model_results(case: ir.Case, meaning) -> list | None:
    data, exits, _ = operands(case)
    return [*[paths.padded_reads(case, meaning)][:takes_out(case)],
            *[meaning.state[i] for i in data + exits]]

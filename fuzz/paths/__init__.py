"""Discharge paths, one module each: how a case runs on it.

A path module has ``NAME``, ``COST`` (the minimizer keeps the cheapest path
that fails), ``EVALUATES`` (whether it computes values), ``not_applicable``,
``harness`` (the Python source that runs the kernel there), ``results``
(the name and declared aval of each result), ``model_results`` (the values
the reference model predicts for them, or None) and, where running it is
more than evaluating its program's ``function()`` (`run_program`), ``run``. The
live run executes the *rendered program*: the header here, the kernel
(`fuzz.emit`) and the path's harness, so a reproducer is exactly the program
that ran (fuzz/triage/render.py adds only what checks its result).

Every path reports the avals the abstract evaluation promises and the avals
(and values) it actually produced, and what it lets us observe of the
program's meaning (semaphore reads, final ref contents), so oracles can
compare them.

The facts oracles and reproducers ask of a path live on its module, read
with `fact` (a flag a module leaves out is False) and `having`:

- ``CONTEXT``: where its statements run: ``"pallas"`` (in a Pallas kernel,
  whose own rules, batching for one, apply), ``"traced"`` (the kernel traced
  alone), ``"refs"`` (refs as values, no kernel), ``"eager"`` (refs as
  values, each primitive run alone). A statement is handed the path module
  and reads this (`ir.Statement.not_applicable`, ``refused_under``);
- ``SEMAPHORES``: which semaphores its programs take: ``"stand-in"`` (an
  int16 array, as interpret mode allows), ``"real"`` (a semaphore type),
  ``"either"``; none (False) on a path of data refs only;
- ``RERUN``: its runs return every value, so reruns compare exactly
  (jit-eager, the rewrites); ``JIT``: it is not already under ``jax.jit``,
  so ``jax.jit`` of it is a second way to run it; ``VMAP`` (with
  ``vmap_batches(k)``: which operands vmap-stack batches) and ``GRAD``: the
  oracles that transform its program apply;
- ``BLOCKS_ON_WAIT``: it runs waits as hardware does (a wait that never
  completes blocks it); ``DETECTS_RACES``: JAX promises it sees a race;
  ``LOCKSTEP``: a mesh's devices run in lockstep; ``VARIANT_OF``: the path
  it runs under other options;
- ``RULES``: whose rules evaluate its statements, where not JAX's discharge
  rules (``"tpu-interpreter"``): a wrong value's root cause names them
  (`fuzz.triage.isolate`);
- ``PUBLIC_RANK``: a reproducer's preference among public paths (1 first);
  ``INTERNAL``: it needs JAX internals (a reproducer's last resort);
  ``PLAIN``: its ``harness`` takes ``plain=True``: the program without the
  wrappers the path adds for the rules they reach (a reproducer tries it
  first, and keeps it where the bug shows so too);
- ``SHOWN``: a report's words for the call that ran the program there
  ("in `pl.pallas_call(..., interpret=True)`"), so a maintainer reads where
  the bug shows, not the fuzzer's name for the path (every path has one).

A path that refuses a case for some of its statements may name them one by
one (``refused(case, stmt)``): `projected` then gives the case without them,
which a campaign runs there too (``--project``). Before that, a path may
restate the case in what it takes, meaning unchanged (``restated(case)``:
the TPU interpreter types the int16 refs that stand in for semaphores).
"""
from __future__ import annotations

import ast
import importlib
from dataclasses import dataclass, field, replace

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import xla_bridge

from fuzz import compat, emit, ir, model

# Errors are data here: keep JAX's own frames in their tracebacks, so that a
# failure is pinned to its statement (fuzz/blame.py) and its signature names
# the JAX functions it passed through.
jax.config.update("jax_traceback_filtering", "off")

# A case's mesh runs on simulated CPU devices, which exist only if asked for
# before JAX starts a backend (its first operation): as many as a mesh may have.
if not xla_bridge.backends_are_initialized():
    jax.config.update("jax_num_cpu_devices",
                      max(ir.MAX_DEVICES, jax.config.jax_num_cpu_devices))

Aval = tuple  # (shape tuple, dtype name)

NAMES = ir.PATHS


@dataclass
class Outcome:
    """What one path did with one case."""
    path: str
    names: tuple[str, ...] = ()        # what each result is ("out", "r0", ...)
    declared: tuple[Aval, ...] = ()    # avals the refs were declared with
    promised: tuple[Aval, ...] = ()    # avals abstract evaluation promises
    produced: tuple[Aval, ...] = ()    # avals the path actually produced
    values: tuple = ()                 # concrete results (evaluating paths)
    error: BaseException | None = None
    # What the run shows of the program's meaning (None: not observable here).
    reads: tuple[int, ...] | None = None   # each semaphore read, in program order
    state: dict[int, list] | None = None   # ref number -> its final contents
    leftover: int | None = None            # the count the TPU interpreter
                                           # reports at kernel exit (0: none)
    races: bool | None = None              # whether its race detector saw one
    # The abstract path: the kernel as traced (a closed jaxpr), and the aval
    # abstract evaluation gives each statement's value.
    jaxpr: object = None
    value_avals: dict[int, Aval] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def first_line(e: BaseException) -> str:
    """``Type: first line of the message``: how an error is named in messages.
    An error that carries a Python traceback (a failed callback) is named by
    the error at the end of it, which says what went wrong."""
    text = str(e).strip().splitlines()
    first = text[0] if text else ""
    if "Traceback (most recent call last)" in first:
        first = first.split("Traceback")[0] + text[-1].strip()
    return f"{type(e).__name__}: {first}"[:300]


def aval_of(x) -> Aval:
    """(shape, dtype) of a result; a Python scalar where an array belongs is
    named as such (``python bool``), so it differs from every array's aval."""
    if not hasattr(x, "shape"):
        return ((), f"python {type(x).__name__}")
    return (tuple(int(d) for d in x.shape), str(jnp.dtype(x.dtype)))


def fact(path: str, name: str):
    """Path ``path``'s fact ``name`` (its module's constant; False if none)."""
    return getattr(MODULES[path], name, False)


def having(name: str) -> tuple[str, ...]:
    """The paths whose fact ``name`` is set, in `NAMES` order."""
    return tuple(p for p in NAMES if fact(p, name))


def variant_of(path: str) -> str:
    """The path that ``path`` runs under other options (itself if none)."""
    module = MODULES.get(path)
    return getattr(module, "VARIANT_OF", path) if module is not None else path


def not_applicable(case: ir.Case, path: str) -> str | None:
    """Why ``path`` cannot express ``case`` (None if it can): the path
    says (a path whose module sets ``GRID`` runs a case's grid; the others
    cannot), or a statement does."""
    if case.grid is not None and not getattr(MODULES[path], "GRID", False):
        return "a grid is pallas_call's: this path runs the kernel once"
    if case.devices is not None and not getattr(MODULES[path], "MESH", False):
        return "a mesh is shard_map's around a pallas_call: this path runs on one device"
    if case.devices is not None and (why := next(
            (why for s in case.statements if (why := s.refused_under("mesh", MODULES[path]))),
            None)):
        return why
    if (case.devices or 0) > len(jax.devices()):
        return (f"this process has {len(jax.devices())} CPU devices, not {case.devices} "
                "(JAX had started before fuzz.paths could ask for more)")
    if why := MODULES[path].not_applicable(case):
        return why
    if why := next((why for s in case.statements
                    if (why := s.not_applicable(MODULES[path]))), None):
        return why
    # Last: what no release has comes before what this one lacks.
    return compat.lacking([*getattr(MODULES[path], "NEEDS", ()),
                           *(f for s in case.statements for f in s.needs()),
                           *(f for s in case.statements for v in ir.views(s)
                             for t in v.transforms for f in getattr(t, "needs", ()))])


def projected(case: ir.Case, path: str) -> ir.Case | None:
    """``case`` as ``path`` can run it, where it cannot as it is: without
    the statements the path refuses (its module's ``refused(case, stmt)``,
    or the statement's own `ir.Statement.not_applicable`; a wrapper's body
    kept, unwrapped), the refs nothing uses then, and its grid or mesh where
    the path takes none (``GRID``, ``MESH``: the kernel run once). A cheap
    path that refuses most drawn programs (the eager one: semaphores,
    ``pltpu.load``, reshaped views) so still runs their data statements; the
    TPU interpreter runs the copies of a program that also counts on int16
    refs. None where the path runs ``case`` already, does not project, or
    refuses what is left; or nothing is left."""
    module = MODULES[path]
    refused = getattr(module, "refused", None)
    if refused is None or not case.valid or not not_applicable(case, path):
        return None
    if hasattr(module, "restated"):
        case = module.restated(case)
    body = case.body
    for n in reversed(range(len(case.statements))):   # (later first: earlier keep their numbers)
        stmt = case.statements[n]
        if refused(case, stmt) or stmt.not_applicable(module):
            body = ir.unwrapped(body, n, 0) if stmt.blocks() else ir.without_statement(body, n)
            if body is None:   # a statement kept uses its value
                return None
    sliced = {r for s in ir.flat(body) for r in s.slices()}
    used = sorted({v.ref for v in ir.walk(body, ir.View)} | sliced)
    if not used:
        return None
    number = {old: new for new, old in enumerate(used)}
    if any(number[r] != r for r in sliced):
        return None   # (a step's refs are numbers, which are not renumbered)
    try:
        kept = replace(case, refs=tuple(case.refs[i] for i in used),
                       grid=case.grid if fact(path, "GRID") else None,
                       devices=case.devices if fact(path, "MESH") else None,
                       body=ir.replace_nodes(body, ir.View, lambda v: replace(v, ref=number[v.ref])))
    except (ir.IRError, ValueError, TypeError, IndexError):
        return None   # (a view that needed the mesh, a step over a ref gone)
    return None if not_applicable(kept, path) else kept


# --- what every path's program shares -----------------------------------------

def unscoped(case: ir.Case) -> list[int]:
    """The refs the kernel is passed: neither scoped nor its collective's."""
    return [i for i, r in enumerate(case.refs) if not r.scoped and not r.collective]


def kernel_refs(case: ir.Case) -> list[int]:
    """The refs whose final contents the kernel's ref parameters hold, in
    order: the unscoped refs, then the scoped data refs' exits (`emit.exits`)."""
    return [*unscoped(case), *emit.exits(case)]


def physical_dtype(ref: ir.Ref) -> str:
    """Semaphores are int16 arrays once discharged, as interpret mode does."""
    return "int16" if ref.is_semaphore else ref.kind


def dyn(case: ir.Case) -> np.ndarray:
    """The dynamic operands in body order (one 0 if none), then the block
    table of a grid whose index maps read it (`ir.Grid`)."""
    table = case.grid.blocks() if case.grid is not None and case.grid.prefetch else ()
    return np.asarray((*(case.dynamic_values or (0,)), *table), dtype=np.int32)


def out_len(case: ir.Case) -> int:
    return max(case.num_reads, 1)


def frame_results(case: ir.Case) -> list[tuple[str, Aval]]:
    """(name, aval) of ``dyn`` and ``out`` as a path that returns them has them."""
    return [("dyn", ((len(dyn(case)),), "int32")), ("out", ((out_len(case),), "int32"))]


def ref_results(case: ir.Case, refs) -> list[tuple[str, Aval]]:
    """(name, declared aval) of the final contents of each of ``refs``."""
    return [(f"r{i}", (tuple(case.refs[i].shape), physical_dtype(case.refs[i]))) for i in refs]


def stacked(case: ir.Case) -> int | None:
    """How many kernel runs a result stacks, one block each: the grid's
    points, or the mesh's devices (None: one run, no stacking)."""
    return case.grid.size if case.grid is not None else case.devices


def padded_reads(case: ir.Case, meaning) -> list:
    """The ``out`` vector a correct run ends with: the reads, then zeros;
    over a grid or a mesh, one such vector per grid point or device."""
    def padded(reads):
        return [*reads, *[0] * (max(len(reads), 1) - len(reads))]
    if (runs := stacked(case)) is None:
        return padded(list(meaning.reads))
    n = case.num_reads
    return [padded(list(meaning.reads[k * n:(k + 1) * n])) for k in range(runs)]


def initial_source(case: ir.Case, i: int) -> str:
    """Ref ``i``'s initial contents as source (an argument, outside any
    kernel): the `model.initial` pattern."""
    ref = case.refs[i]
    if i not in model.data_refs(case):
        shape = tuple(int(d) for d in ref.shape)
        return f"jnp.zeros({shape!r}, {emit.dtype_source(physical_dtype(ref))})"
    return emit.value_source(ref, i)


HEADER = '''\
# discharge-fuzz case (schema {schema}) on path `{path}`.
import json
{imports}{mesh}
X64 = {x64}  # run() under enable_x64(X64): whether 64-bit dtypes exist
DYN = jnp.array({dyn!r}, dtype=jnp.int32)  # dynamic operands, in body order
OUT = ({out},)  # one int32 slot per semaphore read

'''

MESH_HEADER = '''\
# the mesh's devices, asked for before JAX starts (a process that has them keeps its own)
if jax.config.jax_num_cpu_devices < {devices}: jax.config.update("jax_num_cpu_devices", {devices})
'''

RUN = '''
def run():
    f, args = function()
    return f(*args)
'''

RUN_JIT = '''
def run():
    f, args = function()
    return jax.jit(f)(*args)  # the bug shows under jit only
'''


def program(case: ir.Case, path: str, *, jit: bool = False,
            plain: bool = False) -> tuple[str, dict[int, int]]:
    """The program that runs ``case`` on ``path``: imports, inputs, the kernel
    and the path's harness, which defines ``run()`` (and, on evaluating
    paths, ``function()``: the program as a function and its arguments);
    with ``plain``, the path's plain form where it has one (``PLAIN``).
    Returns the source and which statement each of its lines is."""
    if path not in MODULES:
        raise ValueError(f"unknown path {path!r}; known: {NAMES}")
    if reason := not_applicable(case, path):
        raise ValueError(f"cannot render for {path}: {reason}")
    header = HEADER.format(schema=ir.SCHEMA_VERSION, path=path, imports=emit.IMPORTS,
                           mesh=MESH_HEADER.format(devices=case.devices) if case.devices else "",
                           dyn=dyn(case).tolist(), out=out_len(case), x64=case.x64)
    lines, where = emit.kernel_lines(case)
    offset = header.count("\n")
    harness = MODULES[path].harness(case, **({"plain": True} if plain and fact(path, "PLAIN")
                                             else {}))
    if MODULES[path].EVALUATES:
        harness += RUN_JIT if jit else RUN
    text = header + "\n".join(lines) + "\n\n" + harness
    return text, {offset + line: n for line, n in where.items()}


def load(case: ir.Case, path: str) -> dict:
    """The namespace of ``case``'s program on ``path``, executed."""
    text, where = program(case, path)
    return emit.execute(text, where, name=path)


def evaluate(case: ir.Case, path: str, fn, args) -> Outcome:
    """Run ``fn(*args)`` (``path``'s program as a function, maybe wrapped)
    into an Outcome: its results named and declared as the path's ``results``
    says, the ``out`` vector's reads, and each ``r<i>``'s final contents."""
    names, declared = zip(*MODULES[path].results(case))
    o = Outcome(path, names=names, declared=declared)
    o.promised = tuple(aval_of(a) for a in jax.eval_shape(fn, *args))
    result = jax.block_until_ready(fn(*args))
    o.produced = tuple(aval_of(a) for a in result)
    o.values = tuple(np.asarray(a) for a in result)
    # one out vector, or one per grid point
    # (a path of data refs alone returns no ``out``: no semaphore reads)
    o.reads = tuple(int(v) for v in o.values[names.index("out")][..., :case.num_reads].reshape(-1)) \
        if "out" in names else ()
    o.state = {int(n[1:]): v.tolist() for n, v in zip(names, o.values) if n.startswith("r")}
    return o


def run_program(case: ir.Case, path: str, wrap=None) -> Outcome:
    """How an evaluating path runs a case unless its module has a ``run`` of
    its own: the program's ``function()``, wrapped by ``wrap`` if given (the
    metamorphic reruns: ``jax.jit``), evaluated."""
    fn, args = load(case, path)["function"]()
    return evaluate(case, path, fn if wrap is None else wrap(fn), args)


def run(case: ir.Case, path: str, **options) -> Outcome:
    """Run ``case`` on ``path``; an exception is recorded, not raised."""
    module = MODULES[path]
    try:
        if hasattr(module, "run"):
            return module.run(case, **options)
        return run_program(case, path, **options)
    except Exception as e:  # noqa: BLE001 - every JAX error is data here
        return Outcome(path, error=e)


# The path modules use the helpers above, so they load last.
# --- a path's program as a plain function (what an oracle's comparison calls) --

def function_parts(text: str) -> tuple[list[ast.stmt], ast.expr, ast.Tuple]:
    """A program's ``function()`` (``text``, `program`'s), as nodes: the
    statements before its return, and the call and the arguments it returns."""
    function = next(n for n in ast.parse(text).body
                    if isinstance(n, ast.FunctionDef) and n.name == "function")
    *before, returned = function.body[1:]   # (after its docstring)
    call, args = returned.value.elts
    return before, call, args


def function_source(case: ir.Case, path: str, params: list[int], results: list[int],
                    name: str = "f") -> tuple[str, list[str]]:
    """``path``'s program as a function ``name`` of some of its argument
    leaves (``params``, their indices in ``function()``'s arguments
    flattened; the others keep their values) to some of its results
    (``results``, their indices), and the source of every leaf. A parameter
    is named for the ref it fills (``x0`` for ``r0``; ``dyn``). A path that
    writes its program out around the kernel (its ``written_out``, for a
    snippet to merge with the kernel) does; another's calls what its
    ``function()`` returns."""
    text = program(case, path)[0]
    before, call, args = function_parts(text)
    leaves = list(_leaves(args))
    sources = [ast.get_source_segment(text, leaf) for leaf in leaves]
    named = {"DYN": "dyn", **{initial_source(case, i): f"x{i}" for i in unscoped(case)}}
    names = [named.get(source, f"a{k}") for k, source in enumerate(sources)]
    result_names = [n for n, _ in MODULES[path].results(case)]
    head = f"def {name}({', '.join(names[k] for k in params)}):\n"
    if (write := getattr(MODULES[path], "written_out", None)) is not None:
        values = {names[k]: names[k] if k in params else sources[k] for k in range(len(leaves))}
        return head + write(case, values, [result_names[j] for j in results]), sources
    lines = text.splitlines(keepends=True)
    body = "".join("".join(lines[s.lineno - 1:s.end_lineno]) for s in before)
    args = _rebuilt(args, iter(names[k] if k in params else None for k in range(len(leaves))))
    body += f"    results = {ast.unparse(call)}({', '.join(ast.unparse(a) for a in args.elts)})\n"
    body += ("    return results\n" if results == list(range(len(result_names))) else
             f"    return {tuple_source(f'results[{j}]' for j in results)}\n")
    return head + body, sources


def tuple_source(items) -> str:
    """Source of a tuple of ``items`` (sources), as a return statement writes it."""
    items = list(items)
    return ", ".join(items) + ("," if len(items) == 1 else "")


def _leaves(node):
    """The leaf nodes of a tuple expression (nested tuples' elements), in order."""
    if isinstance(node, ast.Tuple):
        for element in node.elts:
            yield from _leaves(element)
    else:
        yield node


def _rebuilt(node, names):
    """Tuple expression ``node`` with each leaf the next of ``names`` names
    (None: the leaf kept)."""
    if isinstance(node, ast.Tuple):
        return ast.Tuple([_rebuilt(element, names) for element in node.elts], ast.Load())
    name = next(names)
    return node if name is None else ast.Name(name, ast.Load())


MODULES = {name: importlib.import_module(f"fuzz.paths.{name}") for name in NAMES}
COST = {n: m.COST for n, m in MODULES.items()}

"""Strategies for whole semaphore programs, valid and deliberately invalid."""
from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fuzz import ir, paths as path_modules
from fuzz.ops import completion, mesh_pattern, mistakes as mistake_table, ops as all_ops
from fuzz.ops.control.common import seen
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.ops.semaphore.common import counts
from strategies.semaphores import semaphore_shapes, semaphores as semaphore_decls
from strategies.transforms import TRANSFORM_KINDS


def operands(*, dynamic=True) -> st.SearchStrategy[ir.Int]:
    """Values for ``inc`` / ``value``: small counts mostly, any int32 sometimes,
    static or dynamic. Shrinks towards static 0.

    >>> operands().example()
    Int(value=2, dynamic=True)
    """
    return counts(dynamic=dynamic)


def _usable(refs):
    """Refs with at least one element (a view can reach a scalar)."""
    return [i for i, r in enumerate(refs) if 0 not in r.shape]


@st.composite
def statements(draw, refs, *, dynamic=True, max_chain=3, kinds=TRANSFORM_KINDS, ops=None,
               body=(), among=None, block=None):
    """A valid statement over ``refs`` (those numbered in ``among``), of one
    of the registered ``ops`` (default: every op that one of them takes),
    following ``body`` (the statements before it by number; it may use their
    values). A control op draws its nested blocks with ``block(visible)``,
    a strategy of blocks (without one, no control op is drawn).

    >>> statements((ir.Ref("int16", (2,)),), ops=(Read,)).example()
    Read(view=View(ref=0, transforms=(At(indices=(Int(value=1, dynamic=False),)),)))
    """
    candidates = _candidates(refs, all_ops() if ops is None else ops, body=body, among=among,
                             dynamic=dynamic, max_chain=max_chain, kinds=kinds, block=block)
    if not candidates:
        raise InvalidArgument(f"no statement of {ops or 'any op'} fits refs {refs}")
    return draw(st.one_of(candidates))


def _candidates(refs, ops, *, body, among, dynamic, max_chain, kinds, block):
    """The draws of each of ``ops`` that one of the refs takes."""
    return [d for op in ops
            if (d := op.draws(refs, body=body, among=among, dynamic=dynamic,
                              max_chain=max_chain, transforms=kinds,
                              **({"block": block} if op.block_fields else {})))
            is not None]


def data_refs(dtypes=ir.DATA_DTYPES, *, shapes=None, memory_spaces=(None, *ir.MEMORY_SPACES),
              scoped=True, aliased=True) -> st.SearchStrategy[ir.Ref]:
    """Data ref declarations: any of ``dtypes`` (of all of them, float32
    weighted three to one), of ``shapes`` (default 0-D to 4-D, zero-size dimensions included),
    in one of ``memory_spaces``; one in four allocated with ``pl.run_scoped``
    (where ``scoped``; the paths outside kernels cannot take it), and an
    operand's output aliased to its input in one of four (where
    ``aliased``). Shrinks towards a scalar operand ref of the first dtype.

    >>> data_refs(dtypes=("float32",)).example()
    Ref(kind='float32', shape=(2, 1), scoped=False, memory_space='smem', aliased=False)
    """
    known = ir.DATA_DTYPES + ir.X64_DTYPES
    if not dtypes or (bad := [d for d in dtypes if d not in known]):
        raise InvalidArgument(f"dtypes must be a non-empty subset of {known}")
    if not memory_spaces or (bad := [m for m in memory_spaces
                                     if m not in (None, *ir.MEMORY_SPACES)]):
        raise InvalidArgument(f"memory_spaces {bad or '()'} must be a non-empty subset of "
                              f"{(None, *ir.MEMORY_SPACES)}")
    if shapes is not None and not isinstance(shapes, st.SearchStrategy):
        raise InvalidArgument(f"shapes={shapes!r} must be a strategy of shapes")
    one_in_four = st.sampled_from((False, False, False, True))
    # Of every dtype, float32 three times as often as each other: AD
    # (grad-matches) differentiates only float32 and float64 refs, and 23 of
    # 400 drawn valid programs had one in use (43 so); it is most real
    # kernels' dtype. A caller naming fewer dtypes gets them uniformly.
    weighted = (*dtypes, *(("float32",) * 2 if set(ir.DATA_DTYPES) <= set(dtypes) else ()))
    return st.builds(lambda kind, shape, space, s, a: ir.Ref(kind, shape, s, space, a and not s),
                     st.sampled_from(weighted),
                     semaphore_shapes(max_dims=4, max_side=4) if shapes is None else shapes,
                     st.sampled_from(tuple(memory_spaces)),
                     one_in_four if scoped else st.just(False),
                     one_in_four if aliased else st.just(False))


def grids(*, max_axes=3, max_points=8) -> st.SearchStrategy[ir.Grid]:
    """``pallas_call`` grids (`ir.Grid`): 1 to ``max_axes`` axes of 1 to 3
    points, at most ``max_points`` in all (the TPU interpreter runs each
    one), blocks in any axis order, reversed or not, the index maps
    computing them or reading them from a scalar-prefetch table. Shrinks
    towards one axis of one point, blocks in order.

    >>> grids().example()
    Grid(shape=(2, 3), order=(1, 0), reverse=False, prefetch=True)
    """
    _check_sizes(max_axes=max_axes, max_points=max_points)
    if not 1 <= max_axes <= 3 or max_points < 1:
        raise InvalidArgument(f"max_axes={max_axes} must be 1 to 3, max_points={max_points} >= 1")
    shapes = st.lists(st.integers(1, 3), min_size=1, max_size=max_axes).filter(
        lambda s: math.prod(s) <= max_points).map(tuple)
    return shapes.flatmap(lambda shape: st.builds(
        ir.Grid, st.just(shape), st.permutations(range(len(shape))).map(tuple),
        st.booleans(), st.booleans()))


def balance(body) -> tuple[ir.Statement, ...]:
    """Statements that bring back to 0 every count ``body`` changes by a
    static amount: a signal undoing each decrementing wait, then a wait
    draining each signal (negative amounts first, so that none of them blocks).

    >>> at0 = ir.View(0, (ir.At((ir.Int(0),)),))
    >>> balance((Signal(at0, ir.Int(2)),))
    (Wait(view=View(ref=0, transforms=(At(indices=(Int(value=0, dynamic=False),)),)), value=Int(value=2, dynamic=False), decrement=True),)
    """
    undo = [Signal(s.view, s.value) for s in body if isinstance(s, Wait) and s.decrement]
    signals = sorted((s for s in body if isinstance(s, Signal) and isinstance(s.inc, ir.Int)),
                     key=lambda s: s.inc.value >= 0)
    return (*undo, *(Wait(s.view, s.inc) for s in signals))


def readout(sems, limit=16) -> tuple[Read, ...]:
    """Reads of every element (the first ``limit`` in order), so that paths
    which return only reads show their final counts too.

    >>> readout((ir.Ref("regular", (2,)),))[1]
    Read(view=View(ref=0, transforms=(At(indices=(Int(value=1, dynamic=False),)),)))
    """
    reads = [Read(ir.View(i, (ir.At(tuple(ir.Int(k) for k in index)),) if index else ()))
             for i, sem in enumerate(sems) for index in np.ndindex(*sem.shape)]
    return tuple(reads[:limit])


# How a program may end: as drawn, with its counts brought back to 0 (which
# the TPU interpreter expects and vmap needs), read out, or both.
ENDINGS = ("none", "balanced", "readout", "balanced+readout")


@st.composite
def _block(draw, refs, families, kinds_of, options, visible, depth):
    """Up to three statements of a control statement's block (`_statement_in`).
    Module-level, as every composite here: ``@st.composite`` on a function
    defined inside another re-reads its source each time (40% of drawing a
    program, when the blocks and six op draws were written so)."""
    stmts = ()
    for _ in range(draw(st.integers(0, 3))):
        stmt = draw(_statement_in(refs, families, kinds_of, options, (*visible, *seen(stmts)),
                                  depth, True))
        if stmt is None:
            break
        stmts += (stmt,)
    return stmts


@st.composite
def _statement_in(draw, refs, families, kinds_of, options, visible, depth, nested=False):
    """A statement of one family (its refs ``families[f]``) after
    ``visible``, or None when no family has a ref to use. Control statements
    come ``depth`` levels deep, half as often as the others; a nested one
    writes no ``out`` slot (a read runs once, at the top level)."""
    def block(inner_visible, inner_refs=None):
        return _block(inner_refs or refs, families, kinds_of, options, inner_visible, depth - 1)

    # Each family's draws, built once: whether it has any decides whether it
    # is drawn from.
    candidates = {f: _candidates(refs, [op for op in kinds_of[f] if not (nested and op.writes_out)],
                                 body=visible, among=among, block=None, **options)
                  for f, among in families.items()}
    usable = [f for f in families if candidates[f]]
    if not usable:
        return None
    if depth > 0 and kinds_of["control"]:
        usable = [f for f in usable for _ in range(2)] + ["control"]
        candidates["control"] = _candidates(refs, kinds_of["control"], body=visible, among=None,
                                            block=block, **options)
    return draw(_one_of(candidates[draw(st.sampled_from(usable))]))


@st.composite
def _one_of(draw, candidates):
    """One of ``candidates``, drawn as `statements` draws it (one composite
    around ``one_of``): the same choice spans, so the same examples."""
    return draw(st.one_of(candidates))


def _check_sizes(**sizes):
    for name, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise InvalidArgument(f"{name}={v!r} must be an int >= 0")


def _runs(paths, fact: str) -> bool:
    """Whether one of ``paths`` evaluates a program with what ``fact`` names
    (``GRID``: a grid, ``MESH``: a mesh): only then is one worth drawing."""
    return any(path_modules.fact(p, "EVALUATES") and path_modules.fact(p, fact) for p in paths)


@st.composite
def programs(draw, *, kinds=ir.SEMAPHORE_KINDS, shapes=None, max_semaphores=3,
             data_dtypes=ir.DATA_DTYPES, data_shapes=None, max_data_refs=2,
             max_statements=6, max_chain=3, transforms=TRANSFORM_KINDS, dynamic=True,
             paths=ir.PATHS, endings=ENDINGS, ops=None, x64=True,
             memory_spaces=(None, *ir.MEMORY_SPACES), scoped=True, max_depth=2, grid=True,
             mesh=True, copies=False):
    """Valid programs over semaphores (of ``kinds``) and data refs (of
    ``data_dtypes``; none without): semaphore statements on ()-shaped views,
    data statements on views of any shape (data refs of ``data_shapes``,
    default `data_refs`'), values of the right shape and
    dtype, every index in bounds, of the statement kinds ``ops`` (default:
    every registered one). With ``x64``, a case may run under
    ``jax.enable_x64`` and then also have int64 and float64 refs. Data refs
    live in one of ``memory_spaces`` (None: the default), some allocated
    with ``pl.run_scoped`` (where ``scoped``: only kernels can run them) and
    some aliased (see `data_refs`). Control statements (loops, conds) nest
    blocks of up to 3 statements, ``max_depth`` levels deep (0: none). With
    ``grid`` (and pallas_call among ``paths``), one case in four runs over a
    `grids` grid, which only the pallas_call programs can take. With
    ``mesh`` (and a path that takes one), one other case in eight runs on
    a mesh of 1, 2, 4 or 8 devices, with a pattern of communication between
    them put in (an op's ``on_mesh``); ``mesh`` a tuple of sizes, every
    case does, on a mesh of one of them. One program with data refs in two
    has a DMA semaphore and buffers to copy into (with ``copies``, every
    one). Shrinks towards one scalar semaphore and few, short statements.

    >>> programs(kinds=("int16",), data_dtypes=(), max_statements=2).example()
    Case(refs=(Ref(kind='int16', shape=(2,), scoped=False),), body=(Signal(view=View(ref=0, transforms=(At(indices=(Int(value=1, dynamic=False),)),)), inc=Int(value=1, dynamic=False), ...),), ...)
    """
    _check_sizes(max_semaphores=max_semaphores, max_statements=max_statements,
                 max_data_refs=max_data_refs, max_depth=max_depth)
    if bad := [d for d in data_dtypes if d not in ir.DATA_DTYPES]:
        raise InvalidArgument(f"data_dtypes {bad} not in {ir.DATA_DTYPES}")
    if max_semaphores < 1 and not (data_dtypes and max_data_refs):
        raise InvalidArgument("a program needs a semaphore or a data ref: "
                              "max_semaphores >= 1, or data_dtypes and max_data_refs")
    if bad := [p for p in paths if p not in ir.PATHS]:
        raise InvalidArgument(f"paths {bad} not in {ir.PATHS}")
    if not endings or (bad := [e for e in endings if e not in ENDINGS]):
        raise InvalidArgument(f"endings must be a non-empty subset of {ENDINGS}")
    if isinstance(mesh, tuple) and not (mesh and all(
            isinstance(d, int) and 1 <= d <= ir.MAX_DEVICES for d in mesh)):
        raise InvalidArgument(f"mesh={mesh!r}: sizes of 1 to {ir.MAX_DEVICES} devices")
    if ops is not None and (bad := [op for op in ops if op not in all_ops()]):
        raise InvalidArgument(f"ops {bad} are not registered statement kinds")
    x64 = bool(data_dtypes) and x64 and draw(st.booleans())
    data_dtypes = (*data_dtypes, *ir.X64_DTYPES) if x64 else tuple(data_dtypes)
    kinds_of = {f: [op for op in (all_ops() if ops is None else ops) if op.family == f]
                for f in ("semaphore", "ref", "control", "dma")}
    # Half the programs use only unscoped int16 arrays, which every path
    # (run_state included) can express; shrinking heads there.
    only_int16 = "int16" in kinds and draw(st.booleans()) is False
    decls = functools.partial(
        semaphore_decls, **({"kinds": ("int16",), "scoped": st.just(False)} if only_int16
                            else {"kinds": kinds}))
    # The first semaphore has elements (unless ``shapes`` says otherwise), so
    # that a program has something to signal, wait on and read.
    first = decls(shapes=semaphore_shapes(min_side=1) if shapes is None else shapes)
    # Semaphores only (where shrinking heads), data refs only (which refs
    # under jit can run too), or both in one kernel.
    mixes = [m for m, ok in (("semaphores", max_semaphores), ("data", data_dtypes and max_data_refs),
                             ("both", max_semaphores and data_dtypes and max_data_refs)) if ok]
    mix = draw(st.sampled_from(mixes))
    sems = (draw(first), *draw(st.lists(decls(shapes=shapes), max_size=max_semaphores - 1))
            ) if mix != "data" else ()
    data = tuple(draw(st.lists(data_refs(data_dtypes, shapes=data_shapes,
                                         memory_spaces=memory_spaces, scoped=scoped), min_size=1,
                               max_size=max_data_refs))) if mix != "semaphores" else ()
    # Copies need a DMA semaphore: one program in two with data refs has one.
    if data and kinds_of["dma"] and (copies or draw(st.booleans())):
        sems += (ir.Ref("dma", draw(semaphore_shapes(min_side=1, max_dims=2, max_side=2))),)
        # A buffer to copy into for each data ref: most copies go between two
        # refs of one dtype and shape.
        data += tuple(dataclasses.replace(r, aliased=False, memory_space=draw(
            st.sampled_from(tuple(memory_spaces)))) for r in data if 0 not in r.shape
            and [(x.kind, x.shape) for x in data].count((r.kind, r.shape)) == 1)
    refs = sems + data
    # Semaphore ops use the semaphores, data ops the data refs: a ref is one
    # or the other (an int16 ref may be either). Copies go between data refs,
    # counted on the semaphores.
    families = {"semaphore": range(len(sems)), "ref": range(len(sems), len(refs)),
                "dma": range(len(sems), len(refs))}
    options = {"dynamic": dynamic, "max_chain": max_chain, "kinds": transforms}
    body = ()
    for _ in range(draw(st.integers(min(1, max_statements), max_statements))):
        stmt = draw(_statement_in(refs, families, kinds_of, options, seen(body), max_depth))
        if stmt is None:
            break
        body += (stmt,)
    for op in all_ops() if ops is None else ops:
        if (complete := completion(op)) is not None:
            body = draw(complete(body, refs))
    ending = draw(st.sampled_from(tuple(endings)))
    if "balanced" in ending:
        body += balance(body)
    if "readout" in ending:
        # Not of DMA semaphores: the TPU interpreter reads no semaphore, and a
        # copy's count is read where it is in flight (a drawn semaphore read).
        body += tuple(r for r in readout(sems) if sems[r.view.ref].kind != "dma")
    # Drawn last, so that the draws before it (and the examples the hunts
    # find) are as they were before grids existed.
    gridded = grid and not isinstance(mesh, tuple) and _runs(paths, "GRID") and \
        draw(st.integers(0, 3)) == 3
    if gridded:
        return ir.Case(refs, body, tuple(paths), x64=x64, grid=draw(grids()))
    meshable = [pattern for op in (all_ops() if ops is None else ops)
                if (pattern := mesh_pattern(op)) is not None]
    if not (mesh and meshable and _runs(paths, "MESH")
            and (isinstance(mesh, tuple) or draw(st.integers(0, 7)) == 7)):
        return ir.Case(refs, body, tuple(paths), x64=x64)
    devices = draw(st.sampled_from(mesh if isinstance(mesh, tuple) else (1, 2, 4, 8)))
    new, pattern = draw(st.one_of([pattern(refs, body, devices) for pattern in meshable]))
    top = [n for n, _ in ir.top_level(body)]
    at = draw(st.integers(0, len(top)))
    body = ir.spliced(body, top[at], pattern) if at < len(top) else (*body, *pattern)
    return ir.Case((*refs, *new), body, tuple(paths), x64=x64, devices=devices)


@st.composite
def swarm_programs(draw, **options):
    """`programs` under swarm testing (Groce et al., ISSTA 2012): each case
    first draws which statement kinds, view transforms and data dtypes it may
    use (each kept with even odds, at least one of each), so that a kind
    that crowds out another in most cases is left out in some, and rare
    combinations (a bool ref under a wrapper, two float refs) get whole
    cases of their own. Shrinks towards fewer kinds."""
    options.setdefault("data_dtypes", draw(_kept(ir.DATA_DTYPES)))
    return draw(programs(ops=draw(_kept(all_ops())), transforms=draw(_kept(TRANSFORM_KINDS)),
                         **options))


@st.composite
def ref_programs(draw, **options):
    """`programs` over data refs alone: no semaphores and no copies, no
    scoped refs, grid or mesh. These are the programs every path runs,
    ``jax.new_ref`` under jit and eagerly among them, and so the ones the
    whole-program oracles (vmap-stack, grad-matches, control-unrolled) can
    compare; among `programs` they are about one in twelve, as most draw a
    semaphore or a copy. The eager path takes one in three
    (`plain_programs`: nine in ten). Shrinks as `programs` does.

    >>> ref_programs().example().refs
    (Ref(kind='float32', shape=(2,), scoped=False, memory_space=None, aliased=False),)
    """
    ops = tuple(op for op in all_ops() if op.family not in ("semaphore", "dma"))
    return draw(programs(max_semaphores=0, ops=ops, scoped=False, grid=False, mesh=False,
                         **options))


@st.composite
def plain_programs(draw, **options):
    """Programs over data refs as plain JAX code over ``jax.Ref`` writes them: no
    Pallas API (no ``pltpu.load``, ``pl.when`` or emit_pipeline: an op's
    ``pallas_api``), and views only indexed (``x.at[...]``; an eager
    ``jax.Ref`` has no ``.reshape``, ``.transpose`` or ``.bitcast``). The
    eager path takes nine in ten (not a shard_map or ``pl.run_scoped``
    wrapper), so the whole-program oracles run on it too; of `ref_programs`,
    one in three. Filtered to those, ref programs are mostly short ones;
    drawn so, they keep their size, and with it the nestings of control
    flow and wrappers where the transforms' rules go wrong: 7 times as
    many of the slowest eager-path bugs' triggers or more (docs/measurements.md,
    "Plain JAX programs"). Half the ref draws of the default campaign
    (``fuzz.campaign.DEFAULT_STRATEGIES``; docs/measurements.md, "Plain
    programs for half the ref draws").

    >>> plain_programs().example().refs
    (Ref(kind='float32', shape=(2,), scoped=False, memory_space=None, aliased=False),)
    """
    ops = tuple(op for op in all_ops() if not op.pallas_api)
    return draw(programs(max_semaphores=0, ops=ops, transforms=("at",), scoped=False,
                         grid=False, mesh=False, **options))


@st.composite
def copy_programs(draw, **options):
    """Kernels that copy, as TPU kernels are written: data refs, each with
    a buffer to copy into, counted on a real DMA semaphore (every program,
    where `programs` gives one in two programs with data refs one), views
    only indexed (``x.at[...]``, integer-array gathers among them), and one
    program in two on a mesh of 2 devices (a `fuzz.ops.dma.patterns`
    pattern of remote copies). No semaphore statements of their own, and
    no int16 stand-in, reshaped, transposed or bitcast view: the TPU
    interpreter, the one path that runs copies as a TPU does, refuses
    those (it takes real semaphores, and copies only indexed views), and a
    copy program runs there and on the discharge alone (`copy_paths`). Its
    copies through a gather, with add=True or of 64-bit data to another
    device come 20 or more times as often as in `programs`. A seventh of
    the default campaign's draws: beside plain programs, 50 of 58 root
    causes fell within ten minutes against 46 without (docs/measurements.md,
    "Copy programs for a seventh of the draws"; against the older
    defaults, at a quarter or a seventh, no more did: "Copy programs").
    Shrinks as `programs` does.

    >>> any(r.kind == "dma" for r in copy_programs().example().refs)
    True
    """
    ops = tuple(op for op in all_ops() if op.family != "semaphore")
    options.setdefault("mesh", draw(st.sampled_from((False, (2,)))))
    options.setdefault("paths", copy_paths())
    return draw(programs(max_semaphores=0, ops=ops, transforms=("at",), copies=True,
                         **options))


def copy_paths() -> tuple[str, ...]:
    """Where a copy program runs: the paths that run copies by rules of
    their own (``RULES``: the TPU interpreter, eager DMAs and race detection
    included) and the discharge itself (the paths that do not evaluate:
    cheap). The other paths, which run the copies' discharge rules, cost a
    third of such a case and see copies in `programs`' draws already."""
    return tuple(p for p in ir.PATHS if path_modules.fact(p, "RULES")
                 or not path_modules.fact(p, "EVALUATES"))


@st.composite
def _kept(draw, features):
    """Each of ``features`` kept on a coin flip (the first kept if none is)."""
    kept = tuple(f for f, keep in zip(features, draw(st.lists(
        st.booleans(), min_size=len(features), max_size=len(features)))) if keep)
    return kept or features[:1]


# --- invalid programs: a valid program plus one deliberate mistake ----------

MISTAKES = tuple(mistake_table())


@st.composite
def invalid_programs(draw, *, mistakes=MISTAKES, max_statements=3, paths=ir.PATHS):
    """Programs with one deliberate mistake, each carrying the clean error a
    user should get (``case.expect``). The mistakes are the op families'
    (`fuzz.ops.mistakes`): non-scalar semaphore views, wrong dtypes,
    out-of-bounds indices, unsupported transforms and slice steps,
    out-of-range operands, unsupported operands, ...

    >>> invalid_programs(mistakes=("wrong_dtype",)).example().expect
    ExpectedError(type='ValueError', match='semaphores of the following types')
    """
    if not mistakes or (bad := [m for m in mistakes if m not in MISTAKES]):
        raise InvalidArgument(f"mistakes must be a non-empty subset of {MISTAKES}")
    base = draw(programs(max_statements=max_statements, max_semaphores=2, paths=paths,
                         grid=False, mesh=False))
    kind = draw(st.sampled_from(tuple(mistakes)))
    new, stmt, expect = draw(mistake_table()[kind].draw(base.refs))
    new = new if isinstance(new, tuple) else (new,)   # a copy's mistake brings several refs
    expect = dataclasses.replace(expect, primitive=ir.primitive(stmt))
    at = draw(st.integers(0, len(base.body)))
    body = ir.with_statement(base.body, at, stmt)
    return ir.Case((*base.refs, *new), body, tuple(paths), expect, x64=base.x64)

"""Strategies for whole semaphore programs, valid and deliberately invalid."""
from __future__ import annotations

import dataclasses
import functools

import numpy as np
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from fuzz import ir
from strategies.semaphores import semaphore_shapes, semaphores as semaphore_decls
from strategies.transforms import TRANSFORM_KINDS, transform_chains


def operands(*, dynamic=True) -> st.SearchStrategy[ir.Int]:
    """Values for ``inc`` / ``value``: small counts mostly, any int32 sometimes,
    static or dynamic. Shrinks towards static 0.

    >>> operands().example()
    Int(value=2, dynamic=True)
    """
    values = st.integers(0, 3) | st.integers(-2**31, 2**31 - 1)
    if not dynamic:
        return values.map(ir.Int)
    return st.builds(ir.Int, values, st.booleans())


def _usable(sems):
    """Semaphores with at least one element (a view can reach a scalar)."""
    return [i for i, s in enumerate(sems) if 0 not in s.shape]


# decrement=False is rare (and not where shrinking heads): its discharge
# collapses the ref (a known JAX bug), which would stop most cases at the
# first tier and pull every shrink towards that bug.
_DECREMENT = st.integers(0, 7).map(lambda n: n < 7)


@st.composite
def statements(draw, sems, *, dynamic=True, max_chain=3, kinds=TRANSFORM_KINDS):
    """A valid statement over one of ``sems`` (which must have a usable one)."""
    usable = _usable(sems)
    if not usable:
        raise InvalidArgument(f"no semaphore with an element among {sems}")
    ref = draw(st.sampled_from(usable))
    view = ir.View(ref, draw(transform_chains(
        sems[ref].shape, max_length=max_chain, dynamic=dynamic, kinds=kinds)))
    # DMA semaphores may be read, but signal and wait reject them.
    ops = ("read",) if sems[ref].kind == "dma" else ("signal", "wait", "read")
    op = draw(st.sampled_from(ops))
    if op == "signal":
        return ir.Signal(view, draw(operands(dynamic=dynamic)))
    if op == "wait":
        # Mostly small amounts: a wait for more than the count blocks forever
        # and leaves the program without a defined meaning (see fuzz/model.py).
        value = draw(st.builds(ir.Int, st.integers(0, 3), st.booleans() if dynamic
                               else st.just(False)) | operands(dynamic=dynamic))
        return ir.Wait(view, value, draw(_DECREMENT))
    return ir.Read(view)


def balance(body) -> tuple[ir.Statement, ...]:
    """Statements that bring back to 0 every count ``body`` changes: a signal
    undoing each decrementing wait, then a wait draining each signal
    (negative amounts first, so that none of them blocks).

    >>> at0 = ir.View(0, (ir.At((ir.Int(0),)),))
    >>> balance((ir.Signal(at0, ir.Int(2)),))
    (Wait(view=View(ref=0, transforms=(At(indices=(Int(value=0, dynamic=False),)),)), value=Int(value=2, dynamic=False), decrement=True),)
    """
    undo = [ir.Signal(s.view, s.value) for s in body if isinstance(s, ir.Wait) and s.decrement]
    signals = sorted((s for s in body if isinstance(s, ir.Signal)),
                     key=lambda s: s.inc.value >= 0)
    return (*undo, *(ir.Wait(s.view, s.inc) for s in signals))


def readout(sems, limit=16) -> tuple[ir.Read, ...]:
    """Reads of every element (the first ``limit`` in order), so that paths
    which return only reads show their final counts too.

    >>> readout((ir.Semaphore("regular", (2,)),))[1]
    Read(view=View(ref=0, transforms=(At(indices=(Int(value=1, dynamic=False),)),)))
    """
    reads = [ir.Read(ir.View(i, (ir.At(tuple(ir.Int(k) for k in index)),) if index else ()))
             for i, sem in enumerate(sems) for index in np.ndindex(*sem.shape)]
    return tuple(reads[:limit])


# How a program may end: as drawn, with its counts brought back to 0 (which
# the TPU interpreter expects and vmap needs), read out, or both.
ENDINGS = ("none", "balanced", "readout", "balanced+readout")


def _check_sizes(**sizes):
    for name, v in sizes.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise InvalidArgument(f"{name}={v!r} must be an int >= 0")


@st.composite
def programs(draw, *, kinds=ir.SEMAPHORE_KINDS, shapes=None, max_semaphores=3,
             max_statements=6, max_chain=3, transforms=TRANSFORM_KINDS, dynamic=True,
             paths=ir.PATHS, endings=ENDINGS):
    """Valid semaphore programs: every statement's view is ``()``-shaped and
    in bounds. Shrinks towards one scalar semaphore and few, short statements.

    >>> programs(kinds=("int16",), max_statements=2).example()
    Case(semaphores=(Semaphore(kind='int16', shape=(2,), scoped=False),), body=(Signal(view=View(ref=0, transforms=(At(indices=(Int(value=1, dynamic=False),)),)), inc=Int(value=1, dynamic=False), ...),), ...)
    """
    _check_sizes(max_semaphores=max_semaphores, max_statements=max_statements)
    if max_semaphores < 1:
        raise InvalidArgument("max_semaphores must be >= 1")
    if bad := [p for p in paths if p not in ir.PATHS]:
        raise InvalidArgument(f"paths {bad} not in {ir.PATHS}")
    if not endings or (bad := [e for e in endings if e not in ENDINGS]):
        raise InvalidArgument(f"endings must be a non-empty subset of {ENDINGS}")
    # Half the programs use only unscoped int16 arrays, which every path
    # (run_state included) can express; shrinking heads there.
    only_int16 = "int16" in kinds and draw(st.booleans()) is False
    decls = functools.partial(
        semaphore_decls, **({"kinds": ("int16",), "scoped": st.just(False)} if only_int16
                            else {"kinds": kinds}))
    # The first semaphore has elements (unless ``shapes`` says otherwise), so
    # that a program has something to signal, wait on and read.
    first = decls(shapes=semaphore_shapes(min_side=1) if shapes is None else shapes)
    sems = (draw(first), *draw(st.lists(decls(shapes=shapes), max_size=max_semaphores - 1)))
    body = ()
    if _usable(sems):
        body = tuple(draw(st.lists(
            statements(sems, dynamic=dynamic, max_chain=max_chain, kinds=transforms),
            min_size=min(1, max_statements), max_size=max_statements)))
    ending = draw(st.sampled_from(tuple(endings)))
    if "balanced" in ending:
        body += balance(body)
    if "readout" in ending:
        body += readout(sems)
    return ir.Case(sems, body, tuple(paths))


# --- invalid programs: a valid program plus one deliberate mistake ----------

NON_SCALAR = ir.ExpectedError("ValueError", r"non-\(\)-shaped semaphore")
WRONG_DTYPE = ir.ExpectedError("ValueError", r"semaphores of the following types")
OUT_OF_BOUNDS = ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)")
BITCAST = ir.ExpectedError("NotImplementedError|ValueError", r"(?i)bitcast")
OVERFLOW = ir.ExpectedError("OverflowError", r"out of bounds for int32")
REMOTE = ir.ExpectedError("NotImplementedError", r"Remote signal not implemented")
MULTI_CORE = ir.ExpectedError("NotImplementedError", r"Multiple core support not implemented")
NEGATIVE_STEP = ir.ExpectedError("ValueError", r"step >= 1")

MISTAKES = ("non_scalar_view", "wrong_dtype", "out_of_bounds", "bitcast",
            "overflow", "remote", "core_index", "negative_step")


def _statement(op, view, value=ir.Int(1)):
    if op == "signal":
        return ir.Signal(view, value)
    if op == "wait":
        return ir.Wait(view, value)
    return ir.Read(view)


@st.composite
def _mistake(draw, kind, sems):
    """(new semaphores, a wrong statement, the error it should raise)."""
    ref = len(sems)
    op = draw(st.sampled_from(("signal", "wait", "read")))
    if kind == "non_scalar_view":
        sem = draw(semaphore_decls(kinds=("regular", "barrier", "int16"),
                                   shapes=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)))
        chain = draw(transform_chains(sem.shape, scalar=False))
        if ir.view_shape((sem,), ir.View(0, chain)) == ():
            chain = ()
        return sem, _statement(op, ir.View(ref, chain)), NON_SCALAR
    if kind == "wrong_dtype":
        kinds = ("int32", "float32") if op == "read" else ("dma", "int32", "float32")
        sem = draw(semaphore_decls(kinds=kinds))
        if 0 in sem.shape:
            sem = ir.Semaphore(sem.kind, (), sem.scoped)
        chain = draw(transform_chains(sem.shape))
        return sem, _statement(op, ir.View(ref, chain)), WRONG_DTYPE
    if kind == "out_of_bounds":
        sem = draw(semaphore_decls(kinds=("regular", "barrier", "int16"),
                                   shapes=st.lists(st.integers(0, 4), min_size=1, max_size=3).map(tuple)))
        axis = draw(st.integers(0, len(sem.shape) - 1))
        n = sem.shape[axis]
        bad = draw(st.integers(n, n + 3) | st.integers(-n - 3, -n - 1))
        indices = [ir.Int(bad) if d == axis else ir.Int(0) for d in range(len(sem.shape))]
        return sem, _statement(op, ir.View(ref, (ir.At(tuple(indices)),))), OUT_OF_BOUNDS
    sem = draw(semaphore_decls(shapes=st.sampled_from([(), (2,), (2, 2)]),
                               kinds=("regular", "barrier", "int16")))
    chain = draw(transform_chains(sem.shape))
    if kind == "bitcast":
        # An int16 ref bitcast to int16 is a no-op, not a mistake.
        t = ir.Bitcast(draw(st.sampled_from(
            [d for d in ir.BITCAST_DTYPES if not (sem.kind == "int16" == d)])))
        at = draw(st.integers(0, len(chain)))
        return sem, _statement(op, ir.View(ref, (*chain[:at], t, *chain[at:]))), BITCAST
    if kind == "negative_step":
        sem = ir.Semaphore(sem.kind, (3, *sem.shape), sem.scoped)
        step = draw(st.integers(-2, -1))
        view = ir.View(ref, (ir.At((ir.Slice(None, None, step),)), ir.At((ir.Int(0),)), *chain))
        return sem, _statement(op, view), NEGATIVE_STEP
    view = ir.View(ref, chain)
    if kind == "overflow":
        value = ir.Int(draw(st.integers(2**31, 2**40) | st.integers(-2**40, -2**31 - 1)))
        return sem, _statement(draw(st.sampled_from(("signal", "wait"))), view, value), OVERFLOW
    if kind == "remote":
        device_id = draw(st.builds(ir.Int, st.integers(0, 3), st.booleans()))
        id_type = draw(st.sampled_from((None, "mesh", "logical")))
        return sem, ir.Signal(view, ir.Int(1), device_id=device_id,
                              device_id_type=id_type), REMOTE
    core = draw(st.builds(ir.Int, st.integers(0, 1), st.booleans()))
    return sem, ir.Signal(view, ir.Int(1), core_index=core), MULTI_CORE


@st.composite
def invalid_programs(draw, *, mistakes=MISTAKES, max_statements=3, paths=ir.PATHS):
    """Programs with one deliberate mistake, each carrying the clean error a
    user should get (``case.expect``): non-scalar views, wrong dtypes,
    out-of-bounds indices, unsupported transforms and slice steps,
    out-of-range operands and unsupported operands.

    >>> invalid_programs(mistakes=("wrong_dtype",)).example().expect
    ExpectedError(type='ValueError', match='semaphores of the following types')
    """
    if not mistakes or (bad := [m for m in mistakes if m not in MISTAKES]):
        raise InvalidArgument(f"mistakes must be a non-empty subset of {MISTAKES}")
    base = draw(programs(max_statements=max_statements, max_semaphores=2, paths=paths))
    kind = draw(st.sampled_from(tuple(mistakes)))
    sem, stmt, expect = draw(_mistake(kind, base.semaphores))
    expect = dataclasses.replace(expect, primitive=ir.primitive(stmt))
    at = draw(st.integers(0, len(base.body)))
    body = (*base.body[:at], stmt, *base.body[at:])
    return ir.Case((*base.semaphores, sem), body, tuple(paths), expect)

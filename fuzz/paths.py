"""Discharge paths: each turns a case into real JAX calls and runs it.

- ``abstract``: ``make_jaxpr`` of the kernel over ``AbstractRef``s, semaphore
  dtypes physicalized as interpret mode does, then ``discharge_state``. Nothing
  is evaluated.
- ``run_state``: ``pl.run_state`` evaluated eagerly over int16 semaphore arrays.
- ``pallas_call``: ``pl.pallas_call(..., interpret=True)`` (the HLO
  interpreter) with the semaphores as ``scratch_shapes`` (or ``pl.run_scoped``
  inside the kernel).
- ``tpu_interpret``: the same call under the TPU interpreter,
  ``interpret=pltpu.InterpretParams()``, which runs semaphores as Python
  objects instead of discharging them.

Every path reports the avals the abstract evaluation promises and the avals
(and values) it actually produced, and what it lets us observe of the
program's meaning (reads, final counts), so oracles can compare them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import contextlib
import io
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from fuzz import compat, emit, ir

# Errors are data here: keep JAX's own frames in their tracebacks, so that a
# failure is pinned to its statement (fuzz/blame.py) and its signature names
# the JAX functions it passed through.
jax.config.update("jax_traceback_filtering", "off")

Aval = tuple  # (shape tuple, dtype name)


@dataclass
class Outcome:
    """What one path did with one case."""
    path: str
    names: tuple[str, ...] = ()        # what each result is ("out", "s0", ...)
    declared: tuple[Aval, ...] = ()    # avals the refs were declared with
    promised: tuple[Aval, ...] = ()    # avals abstract evaluation promises
    produced: tuple[Aval, ...] = ()    # avals the path actually produced
    values: tuple = ()                 # concrete results (evaluating paths)
    error: BaseException | None = None
    # What the run shows of the program's meaning (None: not observable here).
    reads: tuple[int, ...] | None = None   # each read, in program order
    state: tuple[list, ...] | None = None  # final counts of each semaphore
    leftover: int | None = None            # the count the TPU interpreter
                                           # reports at kernel exit (0: none)
    notes: list[str] = field(default_factory=list)


def first_line(e: BaseException) -> str:
    """``Type: first line of the message``: how an error is named in messages."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def aval_of(x) -> Aval:
    return (tuple(int(d) for d in x.shape), str(jnp.dtype(x.dtype)))


def not_applicable(case: ir.Case, path: str) -> str | None:
    """Why ``path`` cannot express ``case`` (None if it can)."""
    if path == "abstract" and not case.valid and any(s.scoped for s in case.semaphores):
        return ("run_scoped's discharge rule leaves scoped refs undischarged, so "
                "a mistake on one cannot surface without evaluation")
    if path == "tpu_interpret" and not case.valid:
        # Invalid programs have no model, so a wait that blocks forever (which
        # this interpreter really does) cannot be ruled out.
        return "invalid programs may block forever under the TPU interpreter"
    if path == "tpu_interpret" and any(s.kind in ir.ARRAY_KINDS for s in case.semaphores):
        # Only the HLO interpreter stands an int16 ref in for a semaphore; here
        # it is just memory (its errors: KeyError, "Length of slice indices").
        return "the TPU interpreter takes real semaphores, not int16 refs"
    if path == "run_state":
        if any(s.kind not in ir.ARRAY_KINDS for s in case.semaphores):
            return "run_state takes arrays; semaphore dtypes exist only as refs"
        if any(s.scoped for s in case.semaphores):
            return "pl.run_scoped has no evaluation rule outside a kernel"
    return None


def _dyn(case):
    return np.asarray(case.dynamic_values or (0,), dtype=np.int32)


def _out_len(case):
    return max(case.num_reads, 1)


def _unscoped(case):
    return [(i, s) for i, s in enumerate(case.semaphores) if not s.scoped]


def _ref_names(case):
    return ("dyn", "out", *[f"s{i}" for i, _ in _unscoped(case)])


def physical_avals(case) -> tuple[Aval, ...]:
    return (((len(_dyn(case)),), "int32"), ((_out_len(case),), "int32"),
            *[(tuple(s.shape), _physical_dtype(s)) for _, s in _unscoped(case)])


def _physical_dtype(sem) -> str:
    return sem.kind if sem.kind in ir.ARRAY_KINDS else "int16"


def run_abstract(case: ir.Case) -> Outcome:
    o = Outcome("abstract", names=_ref_names(case), declared=physical_avals(case))
    o.promised = o.declared
    avals = [compat.ref_aval(_dyn(case).shape, jnp.int32),
             compat.ref_aval((_out_len(case),), jnp.int32)]
    avals += [compat.ref_aval(s.shape, s.kind) if s.kind in ir.ARRAY_KINDS
              else emit.allocation(s).get_ref_aval() for _, s in _unscoped(case)]
    closed = jax.make_jaxpr(emit.live_kernel(case))(*avals)
    discharged = compat.discharge_closed(closed)
    o.produced = tuple(aval_of(a) for a in discharged.out_avals)
    return o


def _reads(case, out) -> tuple[int, ...]:
    return tuple(int(v) for v in np.asarray(out)[:case.num_reads])


def state_function(case: ir.Case):
    """``pl.run_state`` of the kernel, and the arguments it starts from."""
    kernel = emit.live_kernel(case)
    args = (jnp.asarray(_dyn(case)), jnp.zeros((_out_len(case),), jnp.int32),
            *[jnp.zeros(s.shape, s.kind) for _, s in _unscoped(case)])
    return pl.run_state(lambda refs: kernel(*refs)), args


def run_state(case: ir.Case, wrap=lambda f: f) -> Outcome:
    o = Outcome("run_state", names=_ref_names(case), declared=physical_avals(case))
    fn, args = state_function(case)
    fn = wrap(fn)
    o.promised = tuple(aval_of(a) for a in jax.eval_shape(fn, args))
    result = fn(args)
    o.produced = tuple(aval_of(a) for a in result)
    o.values = tuple(np.asarray(a) for a in result)
    o.reads = _reads(case, o.values[1])
    o.state = tuple(v.tolist() for v in o.values[2:])
    return o


def pallas_function(case: ir.Case, interpret=True):
    """``pl.pallas_call`` of the kernel as a function of the ``dyn`` vector."""
    return pl.pallas_call(
        emit.live_kernel(case),
        out_shape=jax.ShapeDtypeStruct((_out_len(case),), jnp.int32),
        scratch_shapes=[emit.allocation(s) for _, s in _unscoped(case)],
        interpret=interpret)


def dyn_vector(case: ir.Case):
    return jnp.asarray(_dyn(case))


def run_pallas_call(case: ir.Case, wrap=lambda f: f) -> Outcome:
    call = wrap(pallas_function(case))
    dyn = dyn_vector(case)
    o = Outcome("pallas_call", names=("out",), declared=(((_out_len(case),), "int32"),))
    o.promised = (aval_of(jax.eval_shape(call, dyn)),)
    result = call(dyn)
    o.produced = (aval_of(result),)
    o.values = (np.asarray(result),)
    o.reads = _reads(case, result)
    return o


# The TPU interpreter's only report of final counts: a line it prints at
# kernel exit for (the first) semaphore left non-zero.
_LEFTOVER = re.compile(r"Semaphore \d+ has non-zero count .* at kernel exit: (-?\d+)")


def run_tpu_interpret(case: ir.Case) -> Outcome:
    call = pallas_function(case, interpret=pltpu.InterpretParams())
    dyn = dyn_vector(case)
    o = Outcome("tpu_interpret", names=("out",), declared=(((_out_len(case),), "int32"),))
    o.promised = (aval_of(jax.eval_shape(call, dyn)),)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            result = jax.block_until_ready(call(dyn))
    except Exception:
        # The interpreter's global state is unusable after an error until reset.
        pltpu.reset_tpu_interpret_mode_state()
        raise
    o.produced = (aval_of(result),)
    o.values = (np.asarray(result),)
    if case.num_reads == 0:  # reads are not interpreted, they never run here
        o.reads = ()
    found = _LEFTOVER.search(printed.getvalue())
    o.leftover = int(found.group(1)) if found else 0
    return o


RUNNERS = {"abstract": run_abstract, "run_state": run_state,
           "pallas_call": run_pallas_call, "tpu_interpret": run_tpu_interpret}
EVALUATING = ("run_state", "pallas_call", "tpu_interpret")


def run(case: ir.Case, path: str, **options) -> Outcome:
    """Run ``case`` on ``path``; an exception is recorded, not raised."""
    try:
        return RUNNERS[path](case, **options)
    except Exception as e:  # noqa: BLE001 - every JAX error is data here
        return Outcome(path, error=e)

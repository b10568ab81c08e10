"""Metamorphic comparisons: two ways of running what must be the same
computation must agree. No model decides the values; only equality counts.

- ``jit-eager``: ``pl.run_state`` under ``jax.jit`` (lowered) against the
  same call eagerly (discharged and evaluated op by op). Not ``pallas_call``:
  the public ``pallas_call`` is already a ``jax.jit``, so eager is jit there.
- ``vmap-stack``: ``jax.vmap`` of the ``pallas_call`` (and, under
  ``jax.jit``, of the ``eager`` path's ``jax.new_ref`` program: the batching
  rules of the ref primitives, then discharge) over two ``dyn`` vectors
  against the two calls one by one: dynamic indices, values, trip counts
  and branches differ across the batch. (``pl.run_state`` has no batching
  rule; the jax_refs program's ``jax.empty_ref`` refuses even an unbatched
  write under vmap, so that program is not batched.)
- ``chain-equivalence``: the program against itself with every view
  re-expressed as one static index of the same element (`model.canonical`).
- ``control-unrolled``: the program against itself with every loop and
  cond replaced by the blocks it runs (`model.unrolled`).
- ``grad-matches``: on the ``eager`` path's ``jax.new_ref`` program under
  ``jax.jit``, as a function of its float refs' initial contents (to their
  final contents), forward- and reverse-mode derivatives (the JVP and
  transpose rules of get, swap and addupdate, and of the control flow
  around them, then discharge) against finite differences and each other,
  with ``jax.test_util.check_grads``. The programs are linear in those
  contents, so central differences are exact but for rounding, and a step
  of 1 keeps that rounding small at float32 (the default step, 1e-4, loses
  about 1% on values near 20). (Not the
  jax_refs program: its ``jax.checkpoint`` around the kernel drops every
  ref write from reverse mode, a known bug that would hide all others.)
- ``partial-discharge``: discharging all refs but one (``should_discharge``)
  leaves that one a ref, untouched, and, with it run as a ``jax.new_ref``,
  the program ends as the full discharge does.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
import re

import jax
import jax.numpy as jnp
import numpy as np

from fuzz import compat, emit, ir, model, paths
from fuzz.differential import Mismatch, side_by_side

# Paths whose runs return every value, so reruns can be compared exactly.
EAGER_PATHS = ("run_state", "pallas_call")
JIT_PATHS = ("run_state",)
VMAP_PATHS = ("eager", "pallas_call")


def _same(a, b) -> bool:
    return len(a) == len(b) and all(
        np.asarray(x).shape == np.asarray(y).shape and np.array_equal(x, y)
        for x, y in zip(a, b))


def _show(values) -> list:
    return [np.asarray(v).tolist() for v in values]


def _observed(o: paths.Outcome) -> tuple:
    """What a run shows of the program (not the inputs it was given)."""
    return (list(o.reads or ()), {i: np.asarray(x).tolist() for i, x in (o.state or {}).items()})


def _describe(o: paths.Outcome) -> str:
    return f"raised {type(o.error).__name__}" if o.error is not None else str(_show(o.values))


# The known JAX bug run-state-jit-semaphore-effect: run_state's abstract
# evaluation lets its body's SemaphoreEffect escape, and jit cannot lower it.
_EFFECT_LEAK = re.compile(r"Cannot lower jaxpr with effects: .*SemaphoreEffect")


@contextlib.contextmanager
def _semaphore_effect_filtered():
    """The workaround of that bug: run_state's abstract evaluation without
    the SemaphoreEffect, so jit lowers and its values can be compared."""
    from jax._src.pallas import primitives as pallas_primitives
    from jax._src.state import discharge as state_discharge
    prim = state_discharge.run_state_p
    real = prim.abstract_eval

    def without_semaphore_effect(*args, **params):
        out, effects = real(*args, **params)
        return out, {e for e in effects
                     if not isinstance(e, pallas_primitives.SemaphoreEffect)}
    prim.abstract_eval = without_semaphore_effect
    try:
        yield
    finally:
        prim.abstract_eval = real


def _jit_mismatch(case, eager, jitted, note="") -> Mismatch:
    what = ("raised " + paths.first_line(jitted.error) if jitted.error is not None
            else "results differ")
    return Mismatch("jit-eager", "?", eager.path, f"under jax.jit{note} {what}",
                    side_by_side(case, [("results", _describe(eager), _describe(jitted))],
                                 "eager", "jax.jit"),
                    shape=(f"raised {type(jitted.error).__name__}" if jitted.error is not None
                           else "results differ") + note,
                    raised=type(jitted.error).__name__ if jitted.error is not None else None)


def jit_vs_eager(case: ir.Case, eager: paths.Outcome) -> tuple[list[Mismatch], bool]:
    """``eager`` is an error-free run on one of `JIT_PATHS`. Returns the
    mismatches and whether values were compared. Where the known effect bug
    stops jit from lowering, that is reported, and the values are compared
    with the effect filtered out."""
    found = []
    jitted = paths.run(case, eager.path, wrap=jax.jit)
    if jitted.error is not None and _EFFECT_LEAK.search(str(jitted.error)):
        found.append(_jit_mismatch(case, eager, jitted))
        with _semaphore_effect_filtered():
            jitted = paths.run(case, eager.path, wrap=jax.jit)
        note = " (SemaphoreEffect filtered)"
    else:
        note = ""
    if jitted.error is not None or not _same(jitted.values, eager.values):
        found.append(_jit_mismatch(case, eager, jitted, note))
    return found, jitted.error is None


def bumped(case: ir.Case) -> ir.Case:
    """``case`` with other dynamic amounts (each op's ``vary``): the same
    kernel and views, other values."""
    return dataclasses.replace(case, body=tuple(s.vary() for s in case.body))


def _ends_at_zero(case: ir.Case) -> bool:
    """Every count back at 0 (data refs may hold anything)."""
    meaning = model.evaluate(case)
    data = model.data_refs(case)
    return meaning.undefined is None and not any(
        np.any(np.asarray(s, dtype=object) != 0)
        for i, s in enumerate(meaning.state) if i not in data)


def vmap_applies(case: ir.Case, path: str = "pallas_call") -> str | None:
    """Why vmap-stack does not apply on ``path`` (None if it does). Scratch
    semaphores live across the grid steps vmap adds, on hardware as in the
    interpreter, so only kernels that leave every count at 0 (as Pallas
    requires) must batch like separate calls."""
    if case.devices is not None:
        return "a program on a mesh is not batched here (its copies and signals cross devices)"
    other = bumped(case)
    if not (_ends_at_zero(case) and _ends_at_zero(other)):
        return "the kernel leaves a semaphore count non-zero (or blocks)"
    return _refused(case, "vmap", path)


def _refused(case: ir.Case, transform: str, path: str) -> str | None:
    """Why JAX refuses ``transform`` of the program, as a statement says."""
    return next((why for s in case.statements if (why := s.refused_under(transform, path))), None)


def _batched_operand(path: str, k: int) -> bool:
    """Whether vmap-stack batches operand ``k`` (after ``dyn``) of ``path``'s
    program, as two copies of it. A ``jax.new_ref`` made inside vmap from an
    unbatched value cannot take batched writes (JAX says so), so on eager
    all are; on pallas_call every other one, so batched and unbatched refs
    meet in one kernel."""
    return path == "eager" or k % 2 == 1


# vmap of vmap: the inner level's batching rules are those of one vmap, the
# outer batches their output (it costs about 5% more than one level).
LEVELS = 2


def _vmap_axes(path: str, leaves, results):
    """How vmap-stack batches ``path``'s program, per level (innermost
    first): the ``in_axes`` of each argument leaf (None for unbatched ones,
    `_batched_operand`) and the ``out_axes`` of each result (anything with
    a ``shape``), each some axis the leaf or result has at that level. They
    follow from position and rank only, so a case batches the same way each
    time it runs, and as it is minimized."""
    batched = [True, *(_batched_operand(path, k) for k in range(len(leaves) - 1))]
    ins = [[(k + level) % (np.ndim(x) + level + 1) if b else None
            for k, (x, b) in enumerate(zip(leaves, batched))] for level in range(LEVELS)]
    outs = [tuple((j + level) % (len(r.shape) + level + 1) for j, r in enumerate(results))
            for level in range(LEVELS)]
    return ins, outs


def vmap_vs_stack(case: ir.Case, path: str = "pallas_call") -> list[Mismatch]:
    """``jax.vmap`` of ``path``'s program, `LEVELS` deep with the axes
    `_vmap_axes` gives, against the calls one by one. Batch elements
    differ (`_element_inputs`) so that mixing them up shows; some operands
    are batched, some not (`_batched_operand`). ``dyn`` is the first leaf of
    the program's arguments."""
    call, args = paths.load(case, path)["function"]()
    leaves, tree = jax.tree_util.tree_flatten(args)
    with_counts = bool(model.counts_refs(case))
    try:
        ins, outs = _vmap_axes(path, leaves, jax.eval_shape(call, *args))
        points = list(itertools.product(range(2), repeat=LEVELS))   # (outer, ..., inner)
        other = jnp.asarray(paths.dyn(bumped(case)))
        inputs = {at: _element_inputs(leaves, other, [a is not None for a in ins[0]], at,
                                      with_counts) for at in points}
        one_by_one = {at: [np.asarray(r) for r in call(*jax.tree_util.tree_unflatten(tree, x))]
                      for at, x in inputs.items()}
    except Exception:  # noqa: BLE001 - the path itself reports it
        return []

    def stacked(k, at=(), level=LEVELS - 1):
        """Leaf ``k`` as the batch elements under ``at`` (outer index first)
        see it, stacked along its axis at each level up to ``level``."""
        if level < 0:
            return inputs[at][k]
        if ins[level][k] is None:   # unbatched at every level
            return leaves[k]
        return np.stack([stacked(k, (*at, b), level - 1) for b in range(2)], axis=ins[level][k])

    batched_call = call
    for level in range(LEVELS):
        batched_call = jax.vmap(batched_call, in_axes=jax.tree_util.tree_unflatten(tree, ins[level]),
                                out_axes=outs[level])
    how = f"vmap {LEVELS} levels deep, in_axes {ins}, out_axes {outs} (innermost first)"
    try:
        results = jax.jit(batched_call)(
            *jax.tree_util.tree_unflatten(tree, [stacked(k) for k in range(len(leaves))]))
    except Exception as e:  # noqa: BLE001
        return [Mismatch("vmap-stack", "?", path,
                         f"vmap raised {paths.first_line(e)}",
                         side_by_side(case, [("results", [_show(r) for r in one_by_one.values()],
                                              "raised")],
                                "one by one", "vmap") + f"\n{how}",
                         shape=f"raised {type(e).__name__}", raised=type(e).__name__)]
    expected = [one_by_one[at] for at in points]
    try:
        batched = [[_element(r, at, [o[j] for o in outs]) for j, r in enumerate(results)]
                   for at in points]
    except (np.exceptions.AxisError, IndexError):
        # A result without the batch axes vmap promised: compared whole.
        batched = [[np.asarray(r) for r in results]] * len(points)
    if all(_same(b, o) for b, o in zip(batched, expected)):
        return []
    return [Mismatch("vmap-stack", "?", path, "vmap result differs from the "
                     "calls one by one",
                     side_by_side(case, [("results", [_show(r) for r in expected],
                                          [_show(r) for r in batched])],
                            "one by one", "vmap") + f"\n{how}",
                     shape="results differ")]


def _element_inputs(leaves, other, batched, at, with_counts: bool) -> list:
    """The argument leaves of batch element ``at`` (outer index first):
    ``dyn`` is ``other`` (`bumped`'s) where every index is 1, the case's
    elsewhere, so
    a mix-up along either level or both shows (with two values, one that
    alternates along each level would hide a mix-up along both); the outer
    level also varies the batched data operands (each element + 1, a bool
    negated), except where the kernel has semaphores, whose counts data may
    feed and which must end at 0."""
    dyn = other if all(at) else leaves[0]
    if with_counts or not at[0]:
        return [dyn, *leaves[1:]]
    return [dyn, *(_plus_one(x) if b else x for x, b in zip(leaves[1:], batched[1:]))]


def _close(a, b) -> bool:
    """Tangents equal up to float32 rounding (check_grads' tolerance)."""
    return all(np.allclose(x, y, rtol=2e-3, atol=2e-3) for x, y in zip(a, b))


def _plus_one(x):
    x = np.asarray(x)
    return np.logical_not(x) if x.dtype == bool else x + np.asarray(1, x.dtype)


def _element(result, at, axes):
    """The batch element ``at`` (outer index first) of a vmapped ``result``
    whose batch axis is ``axes[level]`` at each level (innermost first)."""
    x = np.asarray(result)
    for level, b in zip(reversed(range(len(at))), at):
        x = np.moveaxis(x, axes[level], 0)[b]
    return x


def chain_equivalence(case: ir.Case, outcome: paths.Outcome) -> list[Mismatch]:
    """``outcome`` is an error-free run of ``case`` on one of `EAGER_PATHS`."""
    return _against_rewrite("chain-equivalence", case, outcome, model.canonical(case),
                            "re-indexed", "when every view is one static index")


def control_unrolled(case: ir.Case, outcome: paths.Outcome) -> list[Mismatch]:
    """``outcome`` (an error-free run on one of `EAGER_PATHS`) against the
    same path's run of the program with its loops and conds unrolled
    (`model.unrolled`): each control-flow discharge rule against none."""
    return _against_rewrite("control-unrolled", case, outcome, model.unrolled(case),
                            "unrolled", "when every loop and cond is unrolled")


def _against_rewrite(oracle: str, case: ir.Case, outcome: paths.Outcome,
                     other: ir.Case | None, name: str, when: str) -> list[Mismatch]:
    """``outcome`` against the same path's run of ``other``, a rewrite of
    ``case`` that means the same (None, or ``case`` itself: nothing to
    compare); ``name`` is what the rewrite is called, ``when`` how a
    message says what it did."""
    if other is None or other == case:
        return []
    again = paths.run(other, outcome.path)
    if again.error is None and _observed(again) == _observed(outcome):
        return []
    if again.error is not None and _known_failure(other, outcome.path):
        # The rewrite has a statement a known bug breaks (an unrolled step's
        # slice as a static index, say), which the program as written has
        # not: there is nothing to compare.
        return []
    what = (f"the {name} program raised " + paths.first_line(again.error)
            if again.error is not None else "results differ")
    shape = (f"{name} raised {type(again.error).__name__}" if again.error is not None
             else "results differ")
    return [Mismatch(oracle, "?", outcome.path, f"{what} {when}",
                     side_by_side(case, [("reads, state", _observed(outcome),
                                          _observed(again) if again.error is None
                                          else _describe(again))],
                                  "as written", name) +
                     f"\n{name} program:\n{emit.kernel_source(other)}", shape=shape)]


def _known_failure(case: ir.Case, path: str) -> bool:
    """Whether ``case`` fails on ``path`` with a known finding only."""
    from fuzz import oracles
    failures = oracles.check(case, on_paths=(path,), oracles=("valid-runs",)).failures
    return bool(failures) and all(f.known for f in failures)


# The paths whose programs grad-matches differentiates: the jax.new_ref
# program and pl.run_state's.
GRAD_PATHS = ("eager", "run_state")
# The float dtypes whose refs grad-matches differentiates (bf16 and f16 round
# too coarsely for finite differences).
GRAD_DTYPES = ("float32", "float64")
# The finite-difference step: the programs are linear in the differentiated
# contents (stores, adds, selects; control flow hangs on dyn only), so a
# large step has no truncation error and the least rounding.
GRAD_STEP = 1.0


def grad_applies(case: ir.Case, path: str = "eager") -> str | None:
    """Why grad-matches does not apply on ``path`` (None if it does)."""
    if not _differentiated(case):
        return "no float32 or float64 ref in use"
    return _refused(case, "grad", path)


def _differentiated(case: ir.Case) -> list[int]:
    """The refs grad-matches differentiates: unscoped float refs in use."""
    return [i for i in paths.unscoped(case)
            if i in model.data_refs(case) and case.refs[i].kind in GRAD_DTYPES]


def grad_matches(case: ir.Case, outcome: paths.Outcome) -> list[Mismatch]:
    """``outcome`` is an error-free run of ``case`` on one of `GRAD_PATHS`,
    whose program's argument leaves end with the unscoped refs' contents."""
    from jax.test_util import check_grads
    call, args = paths.load(case, outcome.path)["function"]()
    call = jax.jit(call)
    leaves, tree = jax.tree_util.tree_flatten(args)
    refs, wrt = paths.unscoped(case), _differentiated(case)
    at = [len(leaves) - len(refs) + refs.index(i) for i in wrt]
    names = [n for n, _ in paths.MODULES[outcome.path].results(case)]
    out_at = [names.index(f"r{i}") for i in wrt]

    def of_floats(*xs):
        full = list(leaves)
        for k, x in zip(at, xs):
            full[k] = x
        results = call(*jax.tree_util.tree_unflatten(tree, full))
        return tuple(results[k] for k in out_at)
    # Forward mode against finite differences first, then reverse mode
    # against forward (a transpose rule's bug shows in "rev" only). Reverse
    # mode through a while loop is not defined (JAX says so).
    modes = ("fwd",) if any(s.primitive == "while" for s in case.statements) else ("fwd", "rev")
    xs = tuple(leaves[k] for k in at)
    what = f"r{', r'.join(map(str, wrt))} ({', '.join(names[k] for k in out_at)} out)"
    for mode in modes:
        try:
            # The value each transformation computes along the way first: a
            # wrong one is a wrong value, not a wrong derivative. Reverse
            # mode transposes jax.linearize's linear function: its tangents
            # must be jax.jvp's (forward mode ran first, and passed).
            if mode == "fwd":
                plain, (value, tangents) = of_floats(*xs), jax.jvp(of_floats, xs, xs)
                along = {"jax.jvp": value}
            else:
                value, linear = jax.linearize(of_floats, *xs)
                along = {"jax.linearize": value, "jax.vjp": jax.vjp(of_floats, *xs)[0]}
            for transform, value in along.items():
                if not _same(plain, value):
                    return [Mismatch("grad-matches", "?", outcome.path,
                                     f"{mode}: the value of {what} under {transform} differs "
                                     "from the plain call's",
                                     side_by_side(case, [("values", _show(plain), _show(value))],
                                                  "plain", transform),
                                     shape=f"{mode} value differs")]
            if mode == "rev" and not _close(linearized := linear(*xs), tangents):
                return [Mismatch("grad-matches", "?", outcome.path,
                                 f"{mode}: the tangents of {what} under jax.linearize differ "
                                 "from jax.jvp's",
                                 side_by_side(case, [("tangents", _show(tangents),
                                                      _show(linearized))],
                                              "jax.jvp", "jax.linearize"),
                                 shape=f"{mode} tangents differ")]
            check_grads(of_floats, xs, order=1, modes=(mode,), eps=GRAD_STEP)
        except Exception as e:  # noqa: BLE001 - a mismatch, or AD that raises: both findings
            shape = (f"{mode} derivatives differ" if isinstance(e, AssertionError)
                     else f"{mode} raised {type(e).__name__}")
            return [Mismatch("grad-matches", "?", outcome.path,
                             f"{mode} derivatives of {what}: {paths.first_line(e)}",
                             f"program:\n{emit.kernel_source(case)}", shape=shape)]
    return []


def partial_applies(case: ir.Case) -> str | None:
    """Why partial-discharge does not apply (None if it does): it keeps a
    data ref undischarged, which then runs eagerly as a ``jax.new_ref``."""
    if case.devices is not None:
        return "a mesh program's discharged form runs only under its shard_map"
    if why := compat.lacking(["jax.new_ref"]):
        return why
    if paths.not_applicable(case, "abstract"):
        return "the abstract path cannot express the case"
    if any(r.scoped for r in case.refs):
        # Partly discharged, a run_scoped stays, and it has no evaluation rule.
        return "the kernel allocates with pl.run_scoped"
    if _kept(case) is None:
        return "no unscoped ref in the default memory space that only data statements use"
    return _refused(case, "partial-discharge", "abstract")


def _kept(case: ir.Case) -> int | None:
    """The ref left undischarged: the first unscoped data ref in use, in the
    default memory space. A ref in VMEM or SMEM cannot run outside a kernel
    as it is typed: passed in as a plain jax.new_ref, the values the jaxpr
    types ``bool<vmem>[]`` meet plain ``bool[]`` ones (a loop's carry
    refuses them); made in its memory space inside the jit, any masked
    store to it fails to lower on CPU ('Primitive pad got aval
    uint32<vmem>[] with unknown memory_space type'). Both are of the
    oracle's making, not JAX's."""
    data = sorted(i for i in model.data_refs(case) & set(paths.unscoped(case))
                  if case.refs[i].memory_space is None)
    return data[0] if data else None


def partial_discharge(case: ir.Case, traced: paths.Outcome) -> list[Mismatch]:
    """Full discharge against discharge of every ref but `_kept`'s, run
    from the same initial contents, of the kernel the abstract run
    ``traced``, with the abstract path's own ``discharge``."""
    kept = _kept(case)
    refs = paths.unscoped(case)
    closed, discharge = traced.jaxpr, paths.load(case, "abstract")["discharge"]
    mask = [True, True, *[i != kept for i in refs]]
    inits = [jnp.asarray(paths.dyn(case)), jnp.zeros((paths.out_len(case),), jnp.int32),
             *[jnp.asarray(model.initial(case, i)) for i in refs]]
    full = discharge(closed)
    partial = discharge(closed, should_discharge=mask)
    k = 2 + refs.index(kept)
    name = f"r{kept}"
    if not isinstance(partial.in_avals[k], type(closed.in_avals[k])):
        return [Mismatch("partial-discharge", "?", "abstract",
                         f"{name}, left undischarged, became {partial.in_avals[k]}",
                         side_by_side(case, [(name, str(closed.in_avals[k]),
                                              str(partial.in_avals[k]))],
                                      "declared", "after partial discharge"),
                         shape="kept ref discharged")]
    want = compat.eval_closed(full, *inits)
    ref = jax.new_ref(inits[k])
    # Under jit: Pallas' masked loads and stores have no eager rule on a Ref.
    got = list(jax.jit(functools.partial(compat.eval_closed, partial))(
        *inits[:k], ref, *inits[k + 1:]))
    got.insert(k, ref[...])
    rows = [(n, np.asarray(a).tolist(), np.asarray(b).tolist())
            for n, a, b in zip(("dyn", "out", *[f"r{i}" for i in refs]), want, got)]
    if all(a == b for _, a, b in rows):
        return []
    bad = next(n for n, a, b in rows if a != b)
    return [Mismatch("partial-discharge", "?", "abstract",
                     f"final {bad} differs between full and partial discharge ({name} kept)",
                     side_by_side(case, rows, "full", f"all but {name}"),
                     shape=f"final {'kept' if bad == name else 'discharged'} ref differs")]

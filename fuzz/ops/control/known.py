"""Findings in real, unpatched JAX on control statements that the properties
already know about (matched by `fuzz.suppressions.known_findings`)."""
from __future__ import annotations

import dataclasses

from fuzz import ir
from fuzz.severity import CRASH, REFUSED, USABILITY, WRONG_VALUE
from fuzz.ops.base import KnownFinding
from fuzz.ops.control.cond import Cond
from fuzz.ops.control.loop import Loop
from fuzz.ops.control.pipeline import Pipeline
from fuzz.ops.control.when import When
from fuzz.ops.control.wrap import Wrap
from fuzz.ops.ref.addupdate import AddUpdate
from fuzz.ops.ref.common import Fill, Iota
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.inspect import Inspect
from fuzz.ops.ref.masked_store import MaskedStore
from fuzz.ops.ref.swap import Swap
from fuzz.ops.semaphore.signal import Signal

_STORES = ("swap", "addupdate", "masked_swap")


def _reads_dyn(block) -> bool:
    """Whether ``block`` reads ``dyn`` (a dynamic operand: a ref the kernel
    closes over)."""
    return any(i.dynamic for i in ir.walk(block, (ir.Int, ir.IntArray)))


def _while_reading_a_ref_in_cond_and_body(case: ir.Case, k: int) -> bool:
    """A ``lax.while_loop`` whose condition reads ``dyn`` (a dynamic count;
    the eager harness passes ``dyn`` as a ``jax.Ref``) and whose body reads
    it too (a dynamic operand inside)."""
    stmt = case.statements[k]
    return (isinstance(stmt, Loop) and stmt.via == "while_loop" and stmt.count.dynamic
            and _reads_dyn(stmt.body))


def _wrapping_a_float_store(via):
    """A `Wrap` (via ``via``) with a store to a float ref inside."""
    def trigger(case: ir.Case, k: int) -> bool:
        stmt = case.statements[k]
        return isinstance(stmt, Wrap) and stmt.via == via and any(
            s.primitive in _STORES and case.refs[s.view.ref].kind.startswith("float")
            for s in ir.flat(stmt.body))
    return trigger


def _wrapping_a_ref(*vias):
    """A `Wrap` (via one of ``vias``) with a statement on a ref inside."""
    def trigger(case: ir.Case, k: int) -> bool:
        stmt = case.statements[k]
        return isinstance(stmt, Wrap) and stmt.via in vias and any(
            ir.views(s) for s in ir.flat(stmt.body))
    return trigger


def _wrapping_a_ref_or_scanning_one(*vias):
    """A `Wrap` (via one of ``vias``) with a statement on a ref inside, or a
    scan over one (``xs``)."""
    def trigger(case: ir.Case, k: int) -> bool:
        stmt = case.statements[k]
        return _wrapping_a_ref(*vias)(case, k) or isinstance(stmt, Wrap) and stmt.via in vias \
            and any(isinstance(s, Loop) and s.xs for s in ir.flat(stmt.body))
    return trigger


def _reading_dyn_in_a_scope(*vias):
    """A `Wrap` (via one of ``vias``) reading a dynamic operand (``dyn``, a
    ref the kernel closes over) in a kernel that allocates with run_scoped."""
    def trigger(case: ir.Case, k: int) -> bool:
        stmt = case.statements[k]
        return isinstance(stmt, Wrap) and stmt.via in vias and any(r.scoped for r in case.refs) \
            and _reads_dyn(stmt.body)
    return trigger


# How a wrapper's rule refuses a semaphore's value as an array's.
_SEMAPHORE_AS_ARRAY = (r"ValueError: dtype=(barrier_semaphore|semaphore|dma_sem) is not a valid "
                       r"dtype for JAX type promotion|TypeError: Cannot interpret "
                       r"'(barrier_semaphore|semaphore|dma_sem)' as a data type")


def _wrapping_a_semaphore(*vias):
    """A `Wrap` (via one of ``vias``) with a statement on a semaphore inside."""
    def trigger(case: ir.Case, k: int) -> bool:
        stmt = case.statements[k]
        return isinstance(stmt, Wrap) and stmt.via in vias and any(
            case.refs[v.ref].is_semaphore for s in ir.flat(stmt.body) for v in ir.views(s))
    return trigger


def _scoped_ref_in_custom_or_mapped_function(case: ir.Case, k: int) -> bool:
    """A custom_vjp, custom_vmap or shard_map `Wrap` with a statement on a
    ref allocated with pl.run_scoped inside."""
    stmt = case.statements[k]
    return isinstance(stmt, Wrap) and stmt.via in ("custom_vjp", "custom_vmap", "shard_map") and any(
        case.refs[v.ref].scoped for s in ir.flat(stmt.body) for v in ir.views(s))


def _cond_inspecting_a_zero_size_ref(case: ir.Case, k: int) -> bool:
    """A cond (or pl.when) with a debug callback of a zero-size ref inside."""
    stmt = case.statements[k]
    return isinstance(stmt, (Cond, When)) and any(
        0 in case.refs[v.ref].shape for s in ir.walk(stmt.blocks(), Inspect) for v in s.views)


def _scoped_and_outer_refs_in_wrapper(case: ir.Case, k: int) -> bool:
    """A jit, checkpoint or custom_vjp `Wrap` whose body uses a
    pl.run_scoped ref and a ref from outside the scope: an operand ref, or
    ``dyn`` (a dynamic operand, also a branch index or trip count)."""
    stmt = case.statements[k]
    if not (isinstance(stmt, Wrap) and stmt.via in ("jit", "checkpoint", "custom_vjp")):
        return False
    inner = ir.flat(stmt.body)
    used = {v.ref for s in inner for v in ir.views(s)} | set(stmt.xs)
    return any(case.refs[r].scoped for r in used) and (
        any(not case.refs[r].scoped for r in used)
        or any(i.dynamic for s in inner for i in ir.own(s, (ir.Int, ir.IntArray))))


def _wrapper_mixing_refs(case: ir.Case, k: int) -> bool:
    """A jit, checkpoint, custom_vjp or custom_vmap `Wrap` whose body uses
    two refs, or a ref and ``dyn`` (a dynamic operand, also a loop count or
    a predicate): discharging all refs but one, the kept one may be among
    them beside one that is discharged."""
    stmt = case.statements[k]
    if not (isinstance(stmt, Wrap) and stmt.via in ("jit", "checkpoint", "custom_vjp",
                                                     "custom_vmap")):
        return False
    inner = ir.flat(stmt.body)
    used = {v.ref for s in inner for v in ir.views(s)} | set(stmt.xs)   # (views passed in)
    return len(used) > 1 or bool(used) and any(
        i.dynamic for s in inner for i in ir.own(s, (ir.Int, ir.IntArray)))


def _wrapped_signal_example(via: str) -> ir.Case:
    return ir.Case((ir.Ref("regular", ()),), (Wrap(via, (Signal(ir.View(0), ir.Int(1)),)),))


def _sharded_value_stored(case: ir.Case, k: int) -> bool:
    """A shard_map, and a dynamic operand anywhere or, after the map, a
    statement on a ref the map took (its value comes out sharded: a store
    into it, a semaphore read of it stored into out), or a pipeline around
    the map (which stores its blocks back)."""
    maps = [n for n, s in enumerate(case.statements) if isinstance(s, Wrap) and s.via == "shard_map"]
    if not maps:
        return False
    taken = {v.ref for n in maps for v in ir.walk(case.statements[n].body, ir.View)}
    inside = {m for n in maps for m in range(n, n + ir.size(case.statements[n]))}
    later = [s for m, s in enumerate(case.statements) if m > maps[0] and m not in inside]
    return any(i.dynamic for i in ir.walk_ints(case)) or any(
        v.ref in taken for s in later for v in ir.views(s)) or any(
        isinstance(case.statements[e], Pipeline) for n in maps for e in ir.enclosing(case.body, n))


def _shard_map_of_a_view(case: ir.Case, k: int) -> bool:
    """A shard_map called on views (each at an integer index)."""
    stmt = case.statements[k]
    return isinstance(stmt, Wrap) and stmt.via == "shard_map" and bool(stmt.xs)


def _shard_map_of_a_block(case: ir.Case, k: int) -> bool:
    """A shard_map that takes a view at an integer index an enclosing
    statement hands its block: an inlined pipeline's block (at its traced
    buffer slot), or a row a function is called on."""
    stmt = case.statements[k]
    if not (isinstance(stmt, Wrap) and stmt.via == "shard_map"):
        return False
    views = {r for e in ir.enclosing(case.body, k)
             if isinstance(outer := case.statements[e], Pipeline) and outer.inline
             or isinstance(outer, Wrap) for r in outer.xs}
    return any(v.ref in views for v in ir.walk(stmt.body, ir.View))


def _wrapped_store_example(via: str) -> ir.Case:
    view = ir.View(0, (ir.At((ir.Int(0),)),))
    return ir.Case((ir.Ref("int32", (2,)),), (Wrap(via, (Swap(view, Iota("int32", (), 1)),)),),
                   ("tpu_interpret",))


def _is(kind, test=lambda stmt: True):
    """A trigger: statement k is a ``kind`` that passes ``test``."""
    return lambda case, k: isinstance(case.statements[k], kind) and test(case.statements[k])


def _while_over_a_float_ref(case: ir.Case, k: int) -> bool:
    """A loop that is a ``while`` with a statement on a float ref inside."""
    stmt = case.statements[k]
    return isinstance(stmt, Loop) and stmt.primitive == "while" and any(
        case.refs[v.ref].kind.startswith(("float", "bfloat"))
        for s in ir.flat(stmt.body) for v in ir.views(s))


def _uses_a_ref_it_is_not_given(pipe) -> bool:
    """A pipeline as the emit_pipeline primitive whose block uses a ref
    other than its blocks (one the kernel has, closed over; ``dyn``, read
    for a dynamic index, is one too, and so is a jax.shard_map, which takes
    ``dyn`` as an argument), or signals or waits on one of its blocks (an
    int16 stand-in for a semaphore)."""
    return not pipe.inline and (any(
        v.ref not in pipe.xs or s.family == "semaphore"
        for s in ir.flat(pipe.body) for v in ir.views(s))
        or _reads_dyn(pipe.body)
        or any(isinstance(s, Wrap) and s.via == "shard_map" for s in ir.flat(pipe.body)))


def _wrapping_an_inlined_pipeline(wrap) -> bool:
    return wrap.via != "run_scoped" and any(
        isinstance(s, Pipeline) and s.inline for s in ir.flat(wrap.body))


def _adds_to_its_block_through_an_indexer(pipe) -> bool:
    """An inlined pipeline with an addupdate of one of its blocks through an
    indexer."""
    return pipe.inline and any(
        isinstance(s, AddUpdate) and s.view.ref in pipe.xs
        and any(isinstance(t, ir.At) for t in s.view.named) for s in ir.flat(pipe.body))


def _adds_or_reads_through_two_indexers(case, k) -> bool:
    """An addupdate through a view of two indexers or more, or a get of a
    float ref through one (reverse-mode AD transposes the get into an
    addupdate through the same view)."""
    stmt = case.statements[k]
    adds = isinstance(stmt, AddUpdate)
    reads_a_float = isinstance(stmt, Get) and "float" in case.refs[stmt.view.ref].kind
    return (adds or reads_a_float) and sum(isinstance(t, ir.At) for t in stmt.view.named) >= 2


def _row_store(ref: ir.Ref, *, at=0) -> Swap:
    """A store of the step's slice of ref number ``at`` (of ``ref``)."""
    return Swap(ir.View(at, (ir.STEP,)), Iota(ref.kind, ref.shape[1:], 1))


_ROWS = ir.Ref("int32", (3, 2))

def _storing_loop_on_dyn(loop) -> bool:
    """A while loop (a fori_loop on a count from ``dyn``, or a while_loop)
    with a store inside."""
    return loop.primitive == "while" and any(s.primitive in _STORES for s in ir.flat(loop.body))


def _runs_or_hides(pattern: str) -> tuple[tuple[str, str], ...]:
    """A crash's symptoms: a valid program fails with it, and in an invalid
    one it hides the error the mistake should get."""
    return tuple((oracle, pattern) for oracle in ("valid-runs", "invalid-rejected"))


def _inlined_pipeline_masked_store_of_a_2d_block(case: ir.Case, k: int) -> bool:
    """An inlined pipeline whose body stores with pltpu.store into a block
    (of one of its refs) of two or more dimensions."""
    stmt = case.statements[k]
    return isinstance(stmt, Pipeline) and stmt.inline and any(
        isinstance(s, MaskedStore) and s.view.ref in stmt.xs
        and len(case.refs[s.view.ref].shape) >= 3 for s in ir.flat(stmt.body))


# A fori_loop on a dynamic (under vmap, batched) count storing into a ref.
_BATCHED_COUNT_STORE = ir.Case((ir.Ref("bool", (1,)), ir.Ref("bool", (0,))), (Loop(ir.Int(0, True), (
    Swap(ir.View(0), Iota("bool", (1,), 0)),)),), ("eager",))

KNOWN_FINDINGS: tuple[KnownFinding, ...] = (
    KnownFinding(
        "vmap-while-batched-count-ref-off-leading-axis",
        "jit(vmap(f)) where f runs a fori_loop whose trip count is batched and "
        "stores into a jax.new_ref made from a value batched along an axis "
        "other than 0 fails to lower: the while rule's predicated select "
        "(_pred_bcast_select_hlo) asserts the batched predicate's shape is a "
        "prefix of the carried ref value's ('AssertionError: ((2,), "
        "ShapedArray(int32[3,2]))'); with the ref batched along axis 0 it runs",
        symptoms=(("vmap-stack", r"^vmap raised AssertionError: \(\([\d, ]*\), "
                                 r"ShapedArray\("),),
        trigger=_is(Loop, _storing_loop_on_dyn),
        example=_BATCHED_COUNT_STORE,
        severity=WRONG_VALUE,
        same_as="vmap-while-batched-count-ref-off-leading-axis-silent"),
    KnownFinding(
        "vmap-while-batched-count-cond-not-scalar",
        "0.8.0 and 0.8.1: jit(vmap(f)) where f runs a fori_loop whose trip "
        "count is batched and stores into a jax.new_ref fails: the while "
        "rule's batched loop ends up with the batched predicate as its "
        "condition ('TypeError: cond_fun must return a boolean scalar, but got "
        "output type(s) [ShapedArray(bool[2])]'), whatever the ref's batch axis",
        symptoms=(("vmap-stack", r"^vmap raised TypeError: cond_fun must return a boolean scalar, "
                                 r"but got output type\(s\) \[ShapedArray\(bool\["),),
        trigger=_is(Loop, _storing_loop_on_dyn),
        example=_BATCHED_COUNT_STORE),
    KnownFinding(
        "vmap-while-batched-count-ref-off-leading-axis-silent",
        "jax.vmap of a fori_loop with a batched trip count that stores into a "
        "jax.new_ref batched off axis 0 gives silently wrong values: where the "
        "batched predicate's shape happens to fit the carried ref value's "
        "leading axis, the while rule's predicated select "
        "(_pred_bcast_select_hlo) broadcasts the predicate along the ref's own "
        "axis instead of its batch axis; where the shapes do not fit it fails "
        "to lower (vmap-while-batched-count-ref-off-leading-axis). Under vmap "
        "of vmap, a fori_loop on a batched count storing [True, False] into a "
        "bool ref of shape (2,) batched along axes 1 and 2 gives [True, True] "
        "where the calls one by one give [False, True]",
        symptoms=(("vmap-stack", r"^vmap result differs from the calls one by one$"),),
        # Broad: any wrong vmap result of an eager program with such a loop
        # (the property drew reads, addupdates and gets around it). A batching
        # bug elsewhere in such a program shows on pallas_call's vmap still.
        trigger=_is(Loop, _storing_loop_on_dyn),
        example=ir.Case((ir.Ref("bool", (2,)), ir.Ref("bool", (0,))), (Loop(ir.Int(0, True), (
            Swap(ir.View(0), Iota("bool", (2,), 0)),)),), ("eager",)),
        paths=("eager",),
        severity=WRONG_VALUE),
    KnownFinding(
        "scan-over-zero-length-refs",
        "lax.scan of length 0 over a ref as xs (a ref whose leading axis is 0) "
        "cannot be discharged: _scan_state_discharge_rule traces the loop body "
        "on dynamic_index_in_dim(x, i) of each xs ref, a slice of size 1 of an "
        "axis of size 0 ('slice slice_sizes must be less than or equal to "
        "operand shape, got slice_sizes (1, 2) for operand shape (0, 2)'); a "
        "scan of length 0 over arrays, not refs, runs",
        symptoms=(("valid-runs", r"TypeError: slice slice_sizes must be less than or equal to "
                                 r"operand shape"),
                  # ...before the mistake of an invalid program is reached:
                  ("invalid-rejected", r"^TypeError: slice slice_sizes must be less than or "
                                       r"equal to operand shape")),
        trigger=_is(Loop, lambda loop: bool(loop.xs) and loop.count.value == 0),
        example=ir.Case((ir.Ref("float32", (0, 2)),), (Loop(ir.Int(0), (_row_store(
            ir.Ref("float32", (0, 2))),), "scan", xs=(0,)),), ("run_state",)),
        severity=CRASH),
    KnownFinding(
        "scan-over-zero-length-refs-reverse-mode",
        "0.6.2 and 0.7.0: reverse-mode AD of a pl.run_state program with a "
        "lax.scan of length 0 over a ref as xs fails with a KeyError on the "
        "ref's variable ('KeyError: Var(id=...):Ref{float32[0,2]}'); the "
        "program itself, and forward mode, run",
        symptoms=(("grad-matches", r"^rev derivatives of .*: KeyError: Var\(id=.*\):Ref\{\w+\[0[\d,]*\]\}"),),
        trigger=_is(Loop, lambda loop: bool(loop.xs) and loop.count.value == 0),
        example=ir.Case((ir.Ref("float32", (0, 2)),), (Loop(ir.Int(0), (_row_store(
            ir.Ref("float32", (0, 2))),), "scan", xs=(0,)),), ("run_state",)),
        paths=("run_state",)),
    KnownFinding(
        "run-state-jvp-of-a-while-loop-over-a-float-ref",
        "0.7.2 to 0.10.1: forward-mode AD (jax.jvp) of a pl.run_state program "
        "with a while loop (lax.while_loop, or a fori_loop with a dynamic trip "
        "count) whose body uses a float ref fails in _while_loop_jvp: the "
        "discharged loop's cond jaxpr has debug info with no arg_names, which "
        "it extends by the tangents' ('TypeError: unsupported operand type(s) "
        "for +: 'NoneType' and 'tuple''); an int ref there, or a static trip "
        "count (a scan), is differentiated",
        symptoms=(("grad-matches", r"^(fwd|rev) derivatives of .*: TypeError: unsupported "
                                   r"operand type\(s\) for \+: 'NoneType' and 'tuple'"),),
        trigger=_while_over_a_float_ref,
        example=ir.Case((ir.Ref("float32", (2,)),), (Loop(ir.Int(1, True), (Get(ir.View(0)),)),),
                        ("run_state",)),
        paths=("run_state",)),
    KnownFinding(
        "tpu-interpret-scan-over-refs",
        "the TPU interpreter fails on a lax.scan that takes a kernel ref as xs: "
        "its scan rule passes the refs' stand-ins (buffer ids) to lax.scan as "
        "xs, which slices them ('IndexError: tuple index out of range'); "
        "interpret=True (HLO interpreter) runs the same kernel",
        symptoms=(("valid-runs", r"IndexError: tuple index out of range"),),
        trigger=_is(Loop, lambda loop: bool(loop.xs)),
        example=ir.Case((_ROWS,), (Loop(ir.Int(3), (_row_store(_ROWS),), "scan", xs=(0,)),),
                        ("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH),
    KnownFinding(
        "scan-over-memory-ref-has-no-mapping-handler",
        "0.6.x: a lax.scan that takes a Pallas kernel ref as xs fails as it "
        "traces ('TypeError: no mapping handler for MemRef<...>{...} of type "
        "<class 'jax._src.pallas.core.AbstractMemoryRef'>'): core.mapped_aval "
        "knows state.AbstractRef, but a kernel's refs are the distinct "
        "AbstractMemoryRef there (0.7.0 makes it an AbstractRef); the same scan "
        "over the refs of make_jaxpr (plain AbstractRefs) is traced",
        symptoms=(("valid-runs", r"TypeError: no mapping handler for MemRef<\w*>\{.*\} of type "
                                 r"<class 'jax\._src\.pallas\.core\.AbstractMemoryRef'>"),
                  # ...before an invalid program's own error
                  ("invalid-rejected", r"^TypeError: no mapping handler for MemRef<\w*>\{.*\} of "
                                       r"type <class 'jax\._src\.pallas\.core\.AbstractMemoryRef'>")),
        trigger=_is(Loop, lambda loop: bool(loop.xs)),
        example=ir.Case((_ROWS,), (Loop(ir.Int(3), (_row_store(_ROWS),), "scan", xs=(0,)),),
                        ("pallas_call",))),
    KnownFinding(
        "emit-pipeline-closed-over-ref",
        "a pltpu.emit_pipeline body (as the emit_pipeline primitive, "
        "jax_use_emit_pipeline_primitive) that uses a ref of the kernel it is "
        "not given as an operand (the kernel's scalar operand read for a dynamic "
        "index among them) cannot be discharged: the closed-over ref "
        "reaches the body's ref primitives as a value ('ShapedArray' object has "
        "no attribute 'inner_aval'; '`addupdate` must be called on `Ref` types: "
        "int32[3]'; 'Cannot signal on a non-semaphore Ref: int16[]'), and so "
        "does a semaphore op on one of its blocks (an int16 stand-in); the "
        "same pipeline inlined (without the primitive) runs",
        # (a debug callback of the ref: 'Triggering __jax_array__() during
        # abstractification is no longer supported', or a bare StopIteration
        # out of pipeline_body_discharge_rule; a jax.jit in the body that
        # uses the closed-over ref and a block: pjit's rule is asked to
        # discharge the block only, 'Did not ask for inval to be discharged')
        symptoms=_runs_or_hides(r"ValueError: Did not ask for inval to be discharged but it was|"
                                r"AttributeError: 'ShapedArray' object has no attribute "
                                r"'inner_aval'|ValueError: `(get|swap|addupdate)` must be called "
                                r"on `Ref` types|ValueError: Cannot (signal|wait) on a "
                                r"non-semaphore Ref|ValueError: Triggering __jax_array__\(\) "
                                r"during abstractification|StopIteration: ?$|"
                                # (a copy of closed-over refs in the body: two 90 s
                                # campaigns with seed 1 filed it as new)
                                r"ValueError: DMA source/destination arguments must be Refs"),
        trigger=_is(Pipeline, _uses_a_ref_it_is_not_given),
        example=ir.Case((ir.Ref("int32", (3,)), _ROWS), (Pipeline(3, (1,), (
            Get(ir.View(0, (ir.At((ir.Int(2),)),))),
            Swap(ir.View(1, (ir.STEP, ir.At((ir.Int(1),)))), ir.Result(1)))),),
            ("pallas_call",)),
        severity=CRASH,
        # (the flag is set through jax._src.config: no public context sets it)
        caveat="internal API: the opt-in flag jax_use_emit_pipeline_primitive"),
    KnownFinding(
        "inlined-pipeline-inside-wrapper",
        "a pltpu.emit_pipeline inlined (no emit_pipeline primitive) inside a "
        "jax.jit (or another wrapper) in a kernel cannot be discharged: the "
        "DMA semaphores the pipeline allocates cross the wrapper ('dtype=dma_sem "
        "is not a valid dtype for JAX type promotion'), as semaphores inside "
        "wrappers do (semaphore-inside-wrapper)",
        symptoms=(("valid-runs", r"ValueError: dtype=dma_sem is not a valid dtype for JAX type "
                                 r"promotion"),
                  # ...before an invalid program's own error
                  ("invalid-rejected", r"^ValueError: dtype=dma_sem is not a valid dtype for JAX "
                                       r"type promotion")),
        trigger=_is(Wrap, _wrapping_an_inlined_pipeline),
        example=ir.Case((_ROWS,), (Wrap("jit", (Pipeline(3, (0,), (), inline=True),)),),
                        ("abstract",)),
        severity=CRASH,
        same_as="semaphore-inside-wrapper"),
    KnownFinding(
        "tpu-interpret-emit-pipeline-primitive",
        "the TPU interpreter cannot run the emit_pipeline primitive on CPU: it "
        "runs the pipeline's body outside the abstract TPU mesh the kernel "
        "traced it under ('Unsupported TPU device kind: cpu'); the pipeline "
        "inlined runs there. Over VMEM refs it runs the body, but hands a "
        "primitive it does not interpret itself (a debug callback, an "
        "addupdate) the body's blocks as objects that primitive cannot take "
        "('Triggering __jax_array__() during abstractification is no longer "
        "supported'), where a store to the block runs",
        # (_interpret_jaxpr's catch-all prim.bind of the deferred block; in a
        # kernel the same binds get an int16 buffer id: tpu-interpret-addupdate)
        symptoms=(("valid-runs", r"ValueError: Unsupported TPU device kind: cpu|ValueError: "
                                 r"Triggering __jax_array__\(\) during abstractification"),),
        trigger=_is(Pipeline, lambda pipe: not pipe.inline),
        example=ir.Case((_ROWS,), (Pipeline(3, (0,), (_row_store(_ROWS),)),),
                        ("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH,
        # (the flag is set through jax._src.config: no public context sets it)
        caveat="internal API: the opt-in flag jax_use_emit_pipeline_primitive"),
    KnownFinding(
        "emit-pipeline-zero-size-block",
        "pltpu.emit_pipeline over a ref whose blocks have no element (a "
        "zero-size dimension after the one the grid steps over) fails: as the "
        "emit_pipeline primitive with 'ZeroDivisionError: integer modulo by "
        "zero', inlined with 'Out of bound slice: start=0, dim=0'",
        symptoms=(("valid-runs", r"ZeroDivisionError: integer modulo by zero|"
                                 r"ValueError: Out of bound slice: start=\d+, dim=\d+"),
                  ("invalid-rejected", r"^(ZeroDivisionError: integer modulo by zero|"
                                       r"ValueError: Out of bound slice: start=\d+, dim=\d+)")),
        trigger=lambda case, k: isinstance(case.statements[k], Pipeline) and any(
            0 in case.refs[r].shape[1:] for r in case.statements[k].xs),
        example=ir.Case((ir.Ref("float32", (1, 0)),), (Pipeline(1, (0,), (), inline=True),),
                        ("pallas_call",)),
        severity=CRASH),
    KnownFinding(
        "emit-pipeline-scalar-block",
        "pltpu.emit_pipeline with BlockSpec((None,)) on a 1-D ref fails with a "
        "bare AssertionError in pipeline._window_ref_at "
        "('assert len(window_slice) == 1'), not an error that says no TPU block "
        "layout takes its 0-D block (the last dimension squeezed), as the "
        "emit_pipeline primitive and inlined alike; as the primitive, a "
        "semaphore op or debug callback on the 0-D block fails in the "
        "pipeline_body rule instead ('ShapedArray' object has no attribute "
        "'inner_aval', StopIteration, 'Triggering __jax_array__() during "
        "abstractification is no longer supported')",
        symptoms=(("valid-runs", r"^AssertionError: $|AttributeError: 'ShapedArray' object has "
                                 r"no attribute 'inner_aval'|StopIteration|ValueError: Triggering "
                                 r"__jax_array__\(\) during abstractification"),
                  ("invalid-rejected", r"^AssertionError: ; expected")),
        trigger=lambda case, k: isinstance(case.statements[k], Pipeline) and any(
            len(case.refs[r].shape) == 1 for r in case.statements[k].xs),
        # Inlined: how 0.10.1 to 0.11.1 run a pipeline too.
        example=ir.Case((ir.Ref("int32", (2,)),), (Pipeline(2, (0,), (), inline=True),),
                        ("pallas_call",)),
        severity=USABILITY),
    KnownFinding(
        "addupdate-through-two-indexers",
        "jax.ref.addupdate through a view indexed twice (r.at[1:3] then [0]: "
        "jax.ref.addupdate(r.at[1:3], 0, v) under jax.jit) is refused: "
        "_addupdate_discharge takes one indexer ('Multiple indexers are not "
        "supported for `addupdate`'), where a get or a swap through the same "
        "view runs and r.at[1:3][0] += v works. A block an inlined "
        "pltpu.emit_pipeline gives its body is such a view (its buffer slot is "
        "an indexer of its own), so an addupdate through an index of it fails so too; "
        "and so does jax.grad of a read through such a view under jax.jit (the "
        "transpose of the get is an addupdate through the same view)",
        symptoms=(("valid-runs", r"NotImplementedError: Multiple indexers are not supported "
                                 r"for `addupdate`"),
                  ("grad-matches", r"^rev derivatives of .*: NotImplementedError: Multiple "
                                   r"indexers are not supported for `addupdate`"),
                  # ...and in invalid programs, before their own mistake is reached.
                  ("invalid-rejected", r"^NotImplementedError: Multiple indexers are not "
                                       r"supported for `addupdate`")),
        trigger=lambda case, k: _adds_or_reads_through_two_indexers(case, k) or _is(
            Pipeline, _adds_to_its_block_through_an_indexer)(case, k),
        about=("control", "ref"),   # the addupdate's own statement too
        # (a cold review: the plain form, not the pipeline's, is the bug's scope)
        example=ir.Case((ir.Ref("float32", (4,)),), (AddUpdate(ir.View(0, (
            ir.At((ir.Slice(1, 3),)), ir.At((ir.Int(0),)))), Iota("float32", ())),),
            ("jax_refs",)),
        severity=REFUSED),
    KnownFinding(
        "eager-while-ref-in-cond-and-body",
        "an eager lax.while_loop whose cond_fun and body_fun both close over "
        "one jax.Ref (even only reading it) raises 'only one reference to a "
        "mutable array may be passed as an argument to a function': while_p "
        "is dispatched as a jit of its operands, and the ref is both a cond "
        "const and a body const. Under jax.jit the same loop runs",
        symptoms=(("valid-runs", r"ValueError: only one reference to a mutable array may be "
                                 r"passed as an argument to a function, but when tracing while"),),
        trigger=_while_reading_a_ref_in_cond_and_body,
        example=ir.Case((ir.Ref("int32", (2,)),), (Loop(ir.Int(1, True), (
            Get(ir.View(0, (ir.At((ir.Int(1, True),)),))),), via="while_loop"),), ("eager",)),
        paths=("eager",),
        severity=CRASH),
    KnownFinding(
        "wrapped-bool-addupdate-partial-discharge",
        "a jax.jit whose body adds into a bool ref through a dynamic index "
        "(jax.ref.addupdate(x.reshape((1, 1, 1)), (slice(None), slice(None), "
        "dyn[0]), m)), discharged with that ref kept as a ref, fails: the jit "
        "rule discharges every ref it is given, asked or not ('Did not ask for "
        "inval to be discharged but it was'; the campaign's first run of the case "
        "raised 'Scan carry input and output got mismatched varying manual "
        "axes', the kept ref entering the loop the bool update is discharged "
        "through as a Ref). "
        "Public: the bool ref allocated with pl.run_scoped in a "
        "pallas_call(interpret=True) kernel, whose rule keeps it while "
        "discharging dyn. The full discharge runs (found by the 30-minute "
        "campaign of stop 24, seed 11)",
        # (a replay of the same case raised the second)
        symptoms=(("partial-discharge", r"raised ValueError: (Scan carry input and output got "
                                        r"mismatched varying manual axes|Did not ask for inval "
                                        r"to be discharged but it was)"),
                  ("valid-runs", r"ValueError: Did not ask for inval to be discharged but it was")),
        trigger=lambda case, k: isinstance(case.statements[k], Wrap) and any(
            isinstance(s, AddUpdate) and case.refs[s.view.ref].kind == "bool"
            and any(i.dynamic for i in ir.walk(s.view, (ir.Int, ir.IntArray)))
            for s in ir.flat(case.statements[k].body)),
        # The jit mixes the scoped ref (kept) with dyn (discharged).
        example=ir.Case((ir.Ref("bool", (), scoped=True),), (Wrap("jit", (AddUpdate(ir.View(0, (
            ir.Reshape((1, 1, 1)), ir.At((ir.Slice(), ir.Slice(), ir.Int(0, True))))),
            Iota("bool", (1, 1))),)),), ("pallas_call",)),
        severity=CRASH,
        # One rule: _pjit_state_discharge_rule ignores ctx.should_discharge
        # (made to honour it, both examples run).
        same_as="wrapper-in-run-scoped-mixing-scoped-and-outer-refs"),
    KnownFinding(
        "tpu-interpret-store-inside-checkpoint-or-custom-vmap",
        "the TPU interpreter fails on a kernel that uses a ref or a semaphore "
        "inside jax.checkpoint, jax.custom_vjp or a custom_vmap function: its "
        "_interpret_jaxpr (pallas/mosaic/interpret/interpret_pallas_call.py) "
        "inlines jax.jit but binds those three as they are, so their bodies "
        "meet the interpreter's stand-ins. A store to (or read of) a closed-over "
        "ref inside checkpoint or custom_vmap: re-tracing the body, JAX builds "
        "an effects error message with a fake debug_info and raises "
        "AttributeError: 'Fake' object has no attribute 'arg_names' instead "
        "(under a PrefetchScalarGridSpec, whose debug info is real, the effects "
        "error itself: 'JaxprInputEffect Read<...> does not have a corresponding "
        "jaxpr input'); so does a read of dyn there in a kernel that allocates "
        "with pl.run_scoped. Its other faces: tpu-interpret-ref-inside-custom-vjp, "
        "tpu-interpret-semaphore-inside-wrapper. interpret=True (HLO "
        "interpreter) runs the same kernel",
        symptoms=(("valid-runs", r"AttributeError: 'Fake' object has no attribute 'arg_names'|"
                                 # (up to 0.10.1 "does not have corresponding jaxpr input")
                                 r"ValueError: `JaxprInputEffect` \w+<.*> does not have (a )?"
                                 r"corresponding jaxpr input|"
                                 # ...a debug callback of the ref there:
                                 r"TypeError: No xla_shape_handler for type: <class "
                                 r"'jax\._src\.state\.types\.AbstractRef'>"),),
        trigger=lambda case, k: _wrapping_a_ref("checkpoint", "custom_vmap")(case, k) or (
            _scoped_ref_in_custom_or_mapped_function(case, k) and case.statements[k].via == "custom_vjp"
        ) or _reading_dyn_in_a_scope("checkpoint", "custom_vmap")(case, k),
        example=_wrapped_store_example("checkpoint"),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH),
    KnownFinding(
        "tpu-interpret-ref-inside-custom-vjp",
        "the TPU interpreter fails on a kernel that uses a ref inside a "
        "jax.custom_vjp function: the body's ref primitives are bound on the "
        "interpreter's int16 stand-ins for the refs, which are not refs "
        "('ShapedArray' object has no attribute 'inner_aval', '`swap` must be "
        "called on `Ref` types: int16[]', 'Cannot signal on a non-semaphore "
        "Ref: int16[]'; of a copy, 'DMA source/destination arguments must be "
        "Refs', or, in a loop, \"'Fake' object has no attribute 'arg_names'\"; "
        "a pltpu.store of a value of another dtype or shape, 'Invalid dtype for "
        "`swap`. Ref dtype: int16. Value dtype: bool', 'Invalid shape for `swap`. "
        "Ref shape: (). Value shape: (1, 2)'); "
        "interpret=True (HLO interpreter) runs the same kernel, and the TPU "
        "interpreter runs it without the custom_vjp",
        symptoms=(("valid-runs", r"AttributeError: 'ShapedArray' object has no attribute "
                                 r"'inner_aval'|ValueError: `(get|swap|addupdate)` must be called "
                                 r"on `Ref` types: int16|ValueError: Cannot (signal|wait) on a "
                                 r"non-semaphore Ref|ValueError: DMA source/destination arguments "
                                 r"must be Refs|AttributeError: 'Fake' object has no attribute "
                                 r"'arg_names'|ValueError: Invalid dtype for `swap`\. Ref dtype: "
                                 r"int16\. Value dtype: (?!int16\b)|ValueError: Invalid shape for "
                                 r"`swap`\. Ref shape: \(\)\. Value shape: \(\d"),),
        trigger=_wrapping_a_ref("custom_vjp"),
        example=_wrapped_store_example("custom_vjp"),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH,
        # (a cold review: _interpret_jaxpr has no case for custom_vjp_call,
        # remat or custom_vmap_call; it inlines jit alone)
        same_as="tpu-interpret-store-inside-checkpoint-or-custom-vmap"),
    KnownFinding(
        "checkpoint-vjp-drops-ref-writes",
        "reverse-mode AD through jax.checkpoint of a function that writes a "
        "jax.Ref (closed over or passed in) ignores the writes: the VJP "
        "passes the ref's cotangent through unchanged (x[0] = 3.0 inside "
        "checkpoint gives d x[0] = 1, not 0; x[...] *= 3 gives 1, not 3), "
        "while forward mode and the same function without checkpoint are "
        "right; jax.linearize's tangents are already wrong (jax.grad of "
        "x -> freeze(r) with r[...] = 3.0 inside checkpoint is 1.0, not 0.0): "
        "the linearized jaxpr has no checkpoint equation at all, as remat's "
        "partial evaluation, remat_partial_eval (ad_checkpoint.py), drops a call "
        "with no outputs whose only effect is the ref write. A silent wrong gradient",
        symptoms=(("grad-matches", r"^rev derivatives of .*: AssertionError: Not equal to "
                                   r"tolerance"),
                  # ...jax.linearize's linear function already (what vjp transposes):
                  ("grad-matches", r"^rev: the tangents of .* under jax\.linearize differ from "
                                   r"jax\.jvp's$")),
        trigger=_wrapping_a_float_store("checkpoint"),
        # (a 0-d ref, stored whole: a release whose eager jax.Ref lacks .at[]
        # runs it too, as the report's snippet does)
        example=ir.Case((ir.Ref("float32", ()),), (Wrap("checkpoint", (Swap(
            ir.View(0), Iota("float32", (), 3)),)),), ("eager",)),
        severity=WRONG_VALUE),
    KnownFinding(
        "custom-vmap-vjp-drops-ref-writes",
        "jax.vjp or jax.linearize of a function whose custom_vmap call, with no "
        "outputs, stores to a closed-over jax.Ref returns a primal without the "
        "store, instead of raising; the plain call and forward mode are right "
        "(r[...] = 0.0 there: f(x) is 0.0, jax.vjp(f, x)[0] is x). custom_vmap "
        "documents no reverse-mode support, so jax.vjp may raise; it may not "
        "return a primal other than f(x). 0.10 refuses the program (effects "
        "error). custom_vmap has no partial-eval rule, so its JVP call, "
        "custom_vmap_jvp (custom_batching.py), goes whole to the tangent side; "
        "with no outputs, the 'Linearization failed to produce known values' "
        "check passes vacuously (with one, JAX raises it). A silent wrong value",
        symptoms=(("grad-matches", r"^rev: the value of .* under jax\.(linearize|vjp) differs "
                                   r"from the plain call's$"),),
        trigger=_wrapping_a_float_store("custom_vmap"),
        example=ir.Case((ir.Ref("float32", ()),), (Wrap("custom_vmap", (Swap(
            ir.View(0), Iota("float32", (), 0)),)),), ("eager",)),
        severity=WRONG_VALUE),
    KnownFinding(
        "semaphore-inside-wrapper",
        "pl.pallas_call(interpret=True) fails on a kernel that signals or waits "
        "on a semaphore (or starts a copy counted on a DMA semaphore) inside "
        "jax.jit or another wrapper (jax.checkpoint, custom_vjp, custom_vmap, "
        "jax.shard_map): the HLO interpreter's "
        "resolve_physical_types (jax/_src/pallas/hlo_interpreter.py) makes "
        "semaphores int arrays only through scan, while, cond and run_scoped "
        "(its hop rules), so inside the wrapper the semaphore keeps its "
        "semaphore dtype and the signal's discharge rule computes on it "
        "('dtype=semaphore is not a valid dtype for JAX type promotion', "
        "'dtype=dma_sem ...', 'Cannot interpret 'semaphore' as a data type'); "
        "the same statement outside the wrapper, or in a loop, works",
        symptoms=(("valid-runs", _SEMAPHORE_AS_ARRAY),
                  # ...and in invalid programs, before their own mistake is reached.
                  ("invalid-rejected", rf"^({_SEMAPHORE_AS_ARRAY})")),
        trigger=_wrapping_a_semaphore("jit", "checkpoint", "custom_vjp", "custom_vmap", "shard_map"),
        example=_wrapped_signal_example("jit"),
        severity=CRASH),
    KnownFinding(
        "tpu-interpret-semaphore-inside-wrapper",
        "the TPU interpreter fails on a kernel that signals or waits on a "
        "semaphore inside jax.checkpoint or a custom_vmap function: the semaphore reaches the primitive as the interpreter's "
        "int16 stand-in ('Cannot signal on a non-semaphore Ref: int16[]'), or "
        "the wrapper's body cannot be lowered ('No ir_type_handler for aval "
        "type: AbstractRef')",
        symptoms=(("valid-runs", r"ValueError: Cannot (signal|wait) on a non-semaphore Ref|"
                                 r"TypeError: No ir_type_handler for aval type: <class "
                                 r"'jax\._src\.state\.types\.AbstractRef'>|"
                                 # 0.6.2: the primitive is left for XLA to lower
                                 r"NotImplementedError: MLIR translation rule for primitive "
                                 r"'semaphore_\w+' not found for platform cpu|"
                                 r"AttributeError: 'Fake' object has no attribute 'arg_names'"),),
        trigger=_wrapping_a_semaphore("checkpoint", "custom_vmap"),
        example=dataclasses.replace(_wrapped_signal_example("checkpoint"), paths=("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH,
        same_as="tpu-interpret-store-inside-checkpoint-or-custom-vmap"),
    KnownFinding(
        "scoped-ref-inside-custom-vjp-or-custom-vmap",
        "a kernel that uses, inside a jax.custom_vjp or custom_vmap function "
        "(or passes to a jax.shard_map), a ref allocated with pl.run_scoped (a "
        "semaphore or VMEM scratch) cannot "
        "be discharged: the ref itself reaches an array primitive ('Attempting "
        "to pass a Ref Ref<semaphore_mem>{int16[3]} to a primitive: "
        "dynamic_slice', '... Ref<vmem>{int16[]} to a primitive: add'); an "
        "operand ref, or the statement outside the function, works",
        symptoms=(("valid-runs", r"ValueError: Attempting to pass a Ref Ref<\w+>\{"
                                 r"\w+\[[\d,]*\]\} to a primitive: \w+"),
                  ("invalid-rejected", r"^ValueError: Attempting to pass a Ref Ref<\w+>\{"
                                       r"\w+\[[\d,]*\]\} to a primitive: \w+")),
        trigger=_scoped_ref_in_custom_or_mapped_function,
        example=ir.Case((ir.Ref("regular", (3,), scoped=True),), (Wrap("custom_vjp", (Signal(
            ir.View(0, (ir.At((ir.Int(0, True),)),)), ir.Int(1)),)),), ("abstract",)),
        severity=CRASH,
        # (a cold review: the scoped ref alone works; the function mixes it with
        # dyn, an outer ref, and the wrapper's rule discharges both)
        same_as="wrapper-in-run-scoped-mixing-scoped-and-outer-refs"),
    KnownFinding(
        "partial-discharge-switch-debug-callback-sharding",
        "a lax.switch (or a lax.cond on a traced predicate) with jax.Refs as "
        "operands, whose branch passes a zero-size ref and another ref to "
        "jax.debug.callback, fails to compile: XLA's HLO verifier rejects the "
        "lowered program ('Invalid sharding for instruction: %arg_tuple.0 = "
        "(s16[]) parameter(0)', RET_CHECK 'Shape (s16[]) has 1 leaf nodes "
        "while this sharding has 2'). Public: run eagerly (the switch, or "
        "a pl.when on dyn nested in another, dispatched as a jit of its ref "
        "operands), or under jax.jit of a "
        "function taking the refs; found discharging all refs but one "
        "(should_discharge), whose kept ref reaches the jit as a ref. The full "
        "discharge runs, and so does the same program with a two-element ref",
        symptoms=(("partial-discharge", r"raised JaxRuntimeError: INTERNAL: during context "
                                        r"\[hlo verifier\]: Invalid sharding for instruction"),
                  ("valid-runs", r"JaxRuntimeError: INTERNAL: during context \[hlo verifier\]: "
                                 r"Invalid sharding for instruction"),
                  ("invalid-rejected", r"^JaxRuntimeError: INTERNAL: during context \[hlo "
                                       r"verifier\]: Invalid sharding for instruction")),
        trigger=_cond_inspecting_a_zero_size_ref,
        example=ir.Case((ir.Ref("int16", ()), ir.Ref("int16", (0,))), (Cond(ir.Int(0), (
            (), (Inspect(ir.View(1)), Inspect(ir.View(0))), ())),), ("eager",)),
        severity=CRASH),
    KnownFinding(
        "shard-map-of-a-ref-fails-reshard-assertion",
        "0.9.0 and 0.9.0.1: a jax.shard_map that takes a ref as an argument "
        "fails as it traces with a bare AssertionError: the reshard of its "
        "argument (pjit._reshard_abstract_eval) asserts that the aval is a "
        "ShapedArray, and a ref's is an AbstractRef (every shard_map in a "
        "kernel takes one: dyn, if nothing else)",
        symptoms=(("valid-runs", r"^AssertionError: $"),),
        trigger=_is(Wrap, lambda wrap: wrap.via == "shard_map"),
        example=ir.Case((ir.Ref("int32", (3,)),), (Wrap("shard_map", (
            Swap(ir.View(0), Iota("int32", (3,))),)),), ("abstract",))),
    KnownFinding(
        "shard-map-partial-discharge-discharges-kept-ref",
        "discharging all refs but one (should_discharge) through a jax.shard_map "
        "that takes the kept ref as an argument fails: the shard_map rule "
        "_shard_map_discharge (shard_map.py) discharges "
        "the ref inside anyway, so the ref itself reaches an array primitive "
        "('Attempting to pass a Ref Ref{int32[3]} to a primitive: dynamic_slice') "
        "or comes out of the mapped function ('traced for shard_map returned a "
        "mutable array reference'), or the rule of a cond in it reports it "
        "('Did not ask for inval to be discharged but it was'); the full "
        "discharge runs",
        # (a ref in a memory space prints it: Ref<smem>{bool[]})
        symptoms=(("partial-discharge", r"raised ValueError: (Attempting to pass a Ref "
                                        r"Ref(<\w+>)?\{|"
                                        r"function .* traced for shard_map returned a mutable "
                                        r"array reference|Did not ask for inval to be "
                                        r"discharged but it was)"),),
        # (a scan over the ref, xs, is on it too: 0.7.2 to 0.11.0 report it so)
        # _shard_map_discharge discharges its whole body whatever
        # ctx.should_discharge asks. Public API reaches it only through a
        # shard_map taking a scoped ref in a pl.run_scoped body of a
        # pallas_call(interpret=True) kernel (run_scoped keeps its scoped
        # refs): the same errors, and the scan's. But a shard_map in a kernel
        # is no Pallas feature (fuzz/ops/control/wrap.py draws none there),
        # and with the rule fixed such a kernel still fails (the
        # ShardingTypeError of shard-map-dynamic-update-sharding): the
        # example stays internal.
        trigger=_wrapping_a_ref_or_scanning_one("shard_map"),
        # (the map takes a ref the discharge keeps, and dyn, which it does not)
        example=ir.Case((ir.Ref("int32", (3,)),), (Wrap("shard_map", (Get(
            ir.View(0, (ir.At((ir.Int(1, True),)),))),)),), ("abstract",)),
        severity=CRASH,
        caveat="internal API"),
    KnownFinding(
        "shard-map-scan-over-ref-partial-discharge",
        "discharging all refs but one (should_discharge), a jax.shard_map whose "
        "function runs a lax.scan over a ref it takes (the ref as xs) fails: "
        "'ValueError: Scan carry input and output got mismatched varying manual "
        "axes', even with an empty scan body, for int16 and float32 refs; the full "
        "discharge runs, and so do the scan without the shard_map and a shard_map "
        "of a scan with no xs and no ref in its body (30-minute campaign, seed 13). "
        "A fori_loop reading the kept ref fails so too (the README main job, stop 57)",
        symptoms=(("partial-discharge", r"raised ValueError: Scan carry input and output got "
                                        r"mismatched varying manual axes"),),
        trigger=_is(Wrap, lambda w: w.via == "shard_map" and any(
            isinstance(s, Loop) and (s.xs or any(ir.views(t) for t in ir.flat(s.body)))
            for s in ir.flat(w.body))),
        # (the map takes a ref the discharge keeps and one it does not)
        example=ir.Case((ir.Ref("float32", (1,)), ir.Ref("float32", (1,))), (Wrap("shard_map", (
            Loop(ir.Int(1), (), "scan", xs=(0,)), Get(ir.View(1)))),), ("abstract",)),
        severity=CRASH,
        caveat="internal API",
        # One rule: _shard_map_discharge ignores ctx.should_discharge (made
        # to honour it, both examples run); the scan gets the kept ref as xs.
        same_as="shard-map-partial-discharge-discharges-kept-ref"),
    KnownFinding(
        "shard-map-debug-callback-of-ref-argument",
        "jax.debug.callback (or print) inside a jax.shard_map run eagerly on "
        "a mesh with Explicit axes (jax.make_mesh's default) raises "
        "NotImplementedError, of a plain array argument as of a ref: 'Closing "
        "over inputs to shard_map where the input is sharded on `Explicit` axes "
        "is not implemented. As a workaround, please pass those inputs as an "
        "argument' (they are passed as arguments; _debug_callback_eager_rule, "
        "debugging.py); under jax.jit it runs. Of a pl.run_scoped ref, "
        "'traced for shard_map returned a mutable array reference'; a get or "
        "store of the same ref there works",
        symptoms=(("valid-runs", r"NotImplementedError: Closing over inputs to shard_map where "
                                 r"the input is sharded on `Explicit` axes is not implemented|"
                                 r"ValueError: function .* traced for shard_map returned a "
                                 r"mutable array reference"),
                  # ...in an invalid program, before its own mistake is reached,
                  # and when discharging all refs but one.
                  ("invalid-rejected", r"^NotImplementedError: Closing over inputs to shard_map "
                                       r"where the input is sharded on `Explicit` axes"),
                  ("partial-discharge", r"raised NotImplementedError: Closing over inputs to "
                                        r"shard_map where the input is sharded on `Explicit` axes")),
        trigger=lambda case, k: isinstance(case.statements[k], Wrap) and case.statements[
            k].via == "shard_map" and any(ir.walk(case.statements[k].body, Inspect)),
        example=ir.Case((ir.Ref("float32", (2,)),), (Wrap("shard_map", (Inspect(ir.View(0)),)),),
                        ("run_state",)),
        severity=CRASH),
    KnownFinding(
        "wrapper-in-run-scoped-mixing-scoped-and-outer-refs",
        "a jax.jit, jax.checkpoint or jax.custom_vjp inside a pl.run_scoped body "
        "whose function uses both the scoped ref and a ref from outside the scope (even only "
        "reading them: x = r[...]; y = d_ref[0]) cannot be discharged: "
        "run_scoped discharges its body with its scoped refs kept (the outer "
        "ones discharged), and the wrapper's rule discharges the scoped one "
        "anyway, ignoring ctx.should_discharge (_pjit_state_discharge_rule, "
        "custom_vjp_call_discharge, custom_vmap_call_discharge in "
        "jax/_src/state/discharge.py, _remat_state_discharge_rule) ('Did not ask for inval to be "
        "discharged but it was'); the same statements without the wrapper, or "
        "a wrapper using only one kind of ref, work. Also in JAX 0.10",
        symptoms=(("valid-runs", r"ValueError: Did not ask for inval to be discharged but it was"),
                  ("invalid-rejected", r"^ValueError: Did not ask for inval to be discharged but "
                                       r"it was")),
        trigger=_scoped_and_outer_refs_in_wrapper,
        # (a data ref only, read at dyn[0]: a maintainer pushes back on an
        # int16 stand-in for a semaphore)
        example=ir.Case((ir.Ref("float32", (2,), scoped=True),), (Wrap("jit", (Get(
            ir.View(0, (ir.At((ir.Int(0, True),)),))),)),), ("pallas_call",)),
        severity=CRASH),
    KnownFinding(
        "wrapper-partial-discharge-discharges-kept-ref",
        "discharging all refs but one (should_discharge), a jax.jit, "
        "jax.checkpoint, jax.custom_vjp or custom_vmap whose function uses the "
        "kept ref and a discharged one (another ref, or dyn read for a value, "
        "an index or a loop count) raises 'Did not ask for inval to be "
        "discharged but it was': the wrapper's rule discharges every ref it is "
        "given (jit(lambda: (r0.__setitem__(..., 0), r1.__setitem__(..., 0))) "
        "with r0 kept); a wrapper using the kept ref alone is discharged. "
        "Found again by the main job's 60 s run (partial-discharge-any-b315f6b1); "
        "or the kept ref itself reaches an array primitive inside ('Attempting "
        "to pass a Ref Ref{int16[]} to a primitive: reshape', a custom_vjp "
        "function reading r1.reshape(()))",
        symptoms=(("partial-discharge", r"raised ValueError: (Did not ask for inval to be "
                                        r"discharged but it was|Attempting to pass a Ref "
                                        r"Ref(<\w+>)?\{)"),),
        trigger=_wrapper_mixing_refs,
        example=ir.Case((ir.Ref("int32", (2,)), ir.Ref("int32", (2,))), (Wrap("jit", (
            Swap(ir.View(0), Fill(ir.Int(0), (2,))), Swap(ir.View(1), Fill(ir.Int(0), (2,))))),),
            ("abstract",)),
        severity=CRASH,
        same_as="wrapper-in-run-scoped-mixing-scoped-and-outer-refs"),
    KnownFinding(
        "shard-map-dynamic-update-sharding",
        "discharging a jax.shard_map (on a one-device mesh) that takes a ref "
        "returns the ref's new value with the map's mesh in its sharding "
        "(_shard_map_discharge), unlike the ref's aval: a later store or signal "
        "whose index or amount comes from that ref (dyn, or a ref the map "
        "updated) fails in discharge "
        "with ShardingTypeError: 'dynamic_update_slice operand sharding must be "
        "equal to update sharding, got operand sharding int32[2]({}) and "
        "update sharding int32[1]({Explicit: ('i',)})'; so does a store into a "
        "ref the map took (pltpu.store into one it only read: a 60 s main job "
        "filed two, bool and int64), a semaphore read of one, stored into out, "
        "and an emit_pipeline primitive storing back a block a map in its body took",
        symptoms=(("valid-runs", r"ShardingTypeError: dynamic_update_slice operand sharding must "
                                 r"be equal to update sharding"),
                  ("invalid-rejected", r"^ShardingTypeError: dynamic_update_slice operand sharding "
                                       r"must be equal to update sharding")),
        # Where the sharded value surfaces is any later dynamic statement, or
        # a read of a ref the map took: the trigger is the case's.
        trigger=_sharded_value_stored,
        case_level=True,
        # (a data ref under jax.jit, stored at dyn[0]: public, no stand-in)
        example=ir.Case((ir.Ref("int32", (2,)),), (Wrap("shard_map", (Swap(
            ir.View(0), Fill(ir.Int(1), (2,))),)), Swap(ir.View(0, (ir.At((ir.Int(0, True),)),)),
                                                        Fill(ir.Int(3), ()))), ("jax_refs",)),
        severity=CRASH),
    KnownFinding(
        "shard-map-of-a-ref-view-at-an-integer-index",
        "jax.shard_map called on a ref view whose index holds an array (r.at[1], "
        "r.at[:, 1], r.at[np.array([0, 2])], r.at[pl.ds(i, 1)] with i traced) fails "
        "while tracing with an internal error, 'safe_zip() argument 1 has length 1 "
        "but argument 0 has length 2' (shard_map.py, `wrapped`): ft.flatten(args) "
        "flattens the view through the tracing registry (the ref and its index "
        "array, two leaves), broadcast_prefix(in_specs, args) through the default "
        "one, where the view is one leaf (one spec); and check_no_transformed_refs_args, "
        "which up to 0.9.2 refused a view with a clear TypeError, sees only the "
        "flattened leaves. Public: under jax.jit, r = jax.new_ref(x); "
        "jax.shard_map(f, mesh=jax.make_mesh((1,), ('i',)), in_specs=P(), "
        "out_specs=P())(r.at[1]); the same view passed to jax.jit(f) runs, and so "
        "does a view at a static slice (r.at[1:2], r.at[pl.ds(1, 1)]: no array "
        "leaf). Workaround: pass r or r.at[1:2] and index inside the map. A map "
        "meets it too inside an inlined pltpu.emit_pipeline body (its block is a "
        "view at the traced buffer slot) or a function called on such a view",
        symptoms=(("valid-runs", r"ValueError: safe_zip\(\) argument 1 has length \d+ but "
                                 r"argument 0 has length \d+"),),
        trigger=lambda case, k: _shard_map_of_a_view(case, k) or _shard_map_of_a_block(case, k),
        # (a data ref under jax.jit: public, no stand-in)
        example=ir.Case((ir.Ref("int32", (2, 3)),), (Wrap("shard_map", (
            Get(ir.View(0, (ir.STEP,))),), (0,), ir.Int(1)),), ("jax_refs",)),
        severity=CRASH),
    KnownFinding(
        "inlined-pipeline-masked-store-uint32-index",
        "pltpu.store into a block of two or more dimensions in a pltpu.emit_pipeline "
        "body inlined into DMAs (not the emit_pipeline primitive) fails to "
        "discharge: _swap_discharge_rule (jax/_src/pallas/primitives.py) hands "
        "lax.dynamic_slice the pipeline's uint32 buffer-slot index beside int32 "
        "zeros ('index arguments to dynamic_slice must be integers of the same "
        "type, got: uint32, int32, int32'); a 1-D block, a pltpu.load, and the "
        "primitive pipeline work",
        symptoms=_runs_or_hides(r"index arguments to dynamic_slice must be integers of the "
                                r"same type, got: uint32"),
        trigger=_inlined_pipeline_masked_store_of_a_2d_block,
        example=ir.Case((ir.Ref("int32", (2, 2, 2)),), (Pipeline(2, (0,), (MaskedStore(
            ir.View(0, (ir.STEP,)), Iota("int32", (2, 2))),), inline=True),), ("pallas_call",)),
        severity=CRASH,
        # (a cold review: one fix, _swap_discharge_rule casting its indices as
        # the load rule does)
        same_as="masked-store-slice-and-dynamic-index-under-x64"),
)

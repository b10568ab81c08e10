"""Findings in real, unpatched JAX on DMA statements that the properties
already know about (matched by `fuzz.suppressions.known_findings`)."""
from __future__ import annotations

import dataclasses

from fuzz import ir
from fuzz.severity import CRASH, USABILITY, WRONG_VALUE
from fuzz.ops.base import NO_INDEXER_SHAPE, KnownFinding, view_class
from fuzz.ops.dma.mistakes import DTYPE, OUT_OF_BOUNDS, SEMAPHORE_KIND, SHAPE
from fuzz.ops.dma.start import DmaStart
from fuzz.ops.control.wrap import Wrap
from fuzz.ops.dma.wait import DmaWait
from fuzz.ops.semaphore.read import Read
from fuzz.ops.semaphore.signal import Signal
from fuzz.ops.semaphore.wait import Wait


def _wait_with_a_src_sem_view(case: ir.Case, k: int) -> bool:
    """A wait on a copy with a ``src_sem``, one of its semaphores a view."""
    stmt = case.statements[k]
    return isinstance(stmt, DmaWait) and stmt.src_sem is not None and any(
        v.transforms for v in stmt.semaphores())


def _on_a_semaphore_signalled_twice_by_one_copy(case: ir.Case, k: int) -> bool:
    """A statement on a semaphore that a copy, started here or before, has
    as both its ``sem`` and its ``src_sem`` (a local copy's write and read,
    a remote copy's receive and send)."""
    refs = {v.ref for v in ir.views(case.statements[k])}
    return any(isinstance(s, DmaStart) and s.src_sem is not None and s.src_sem.ref == s.sem.ref
               and s.sem.ref in refs for s in case.statements[:k + 1])


def _calling_back_with_64_bits_on_a_mesh(case: ir.Case, k: int) -> bool:
    """On a mesh of more than one device, under x64: a statement on a 64-bit
    ref. The TPU interpreter's callbacks there see none of the context
    manager's x64: a copy of 64-bit data fails so, remote or local, a debug
    callback or print of a 64-bit ref, and on 0.12.1 a plain load or store
    (the README's main job met each of them as new)."""
    return case.x64 and (case.devices or 1) > 1 and any(
        case.refs[v.ref].kind in ir.X64_DTYPES for v in ir.views(case.statements[k]))


def _copy_view_not_only_indexed(case: ir.Case, k: int) -> bool:
    """A copy's source or destination view with a reshape, transpose or bitcast."""
    stmt = case.statements[k]
    return isinstance(stmt, (DmaStart, DmaWait)) and any(
        isinstance(t, (ir.Reshape, ir.Transpose, ir.Bitcast))
        for v in (stmt.src, stmt.dst) for t in v.transforms)


def _copy_view_gathers(case: ir.Case, k: int) -> bool:
    """A copy's source or destination view indexed by an integer array."""
    stmt = case.statements[k]
    return isinstance(stmt, (DmaStart, DmaWait)) and any(
        isinstance(i, ir.IntArray) for v in (stmt.src, stmt.dst)
        for t in v.transforms if isinstance(t, ir.At) for i in t.indices)


def _invalid(refs, start, expect) -> ir.Case:
    return ir.Case(refs, (start,), ("abstract", "pallas_call"),
                   dataclasses.replace(expect, primitive="dma_start"))


def _making(mistake: str):
    """A copy that makes ``mistake`` (`DmaOp.mistakes`)."""
    return lambda case, k: isinstance(case.statements[k], (DmaStart, DmaWait)) and (
        mistake in case.statements[k].mistakes(case))


def _accepted(what: str, mistake: str, example: ir.Case, extra: str = "",
              symptoms=(), consequences=()) -> KnownFinding:
    """A copy with ``what`` wrong that JAX lets through unreported: one
    root cause, dma_start checking nothing (the first entry's report)."""
    entry_id = f"dma-start-accepts-{mistake.removeprefix('dma_').replace('_', '-')}"
    return KnownFinding(
        entry_id,
        f"a copy started with {what} traces and discharges without an error "
        "(discharge_state, and pl.pallas_call(..., interpret=True) runs it): "
        "dma_start's abstract evaluation (jax/_src/pallas/mosaic/primitives.py) "
        "checks no such thing, and neither does its discharge rule" + extra,
        symptoms=(("invalid-rejected", r"^dma_start ran without error"), *symptoms),
        consequences=consequences, trigger=_making(mistake), example=example,
        severity=USABILITY, same_as="" if entry_id == _ACCEPTS_FIRST else _ACCEPTS_FIRST)


_ACCEPTS_FIRST = "dma-start-accepts-semaphore-kind"


def _start(case: ir.Case, k: int) -> bool:
    return isinstance(case.statements[k], DmaStart)


def _copied(src, dst, sem, src_sem=None, **start) -> tuple:
    """A copy started and waited on (the statements of most examples)."""
    return DmaStart(src, dst, sem, src_sem, **start), DmaWait(src, dst, sem, src_sem)


_SEMS = ir.Ref("dma", (2,))
_DATA = ir.Ref("float32", (2,))
_AT0, _AT1 = (ir.View(0, (ir.At((ir.Int(i),)),)) for i in (0, 1))

def _copy_of_an_operand_in_no_memory_space(case: ir.Case, k: int) -> bool:
    """A copy (its start or wait) from or to a kernel operand that names no
    memory space."""
    stmt = case.statements[k]
    return isinstance(stmt, (DmaStart, DmaWait)) and any(
        not case.refs[v.ref].scoped and case.refs[v.ref].memory_space is None
        for v in (stmt.src, stmt.dst))


def _copy_reshaped_then_transformed(case: ir.Case, k: int) -> bool:
    """A copy whose source or destination is reshaped, then transformed again."""
    stmt = case.statements[k]
    return isinstance(stmt, (DmaStart, DmaWait)) and any(
        isinstance(t, ir.Reshape) and n + 1 < len(v.transforms)
        for v in ir.views(stmt) for n, t in enumerate(v.transforms))


def _semaphore_view_not_ending_in_an_index(case: ir.Case, k: int) -> bool:
    """A copy (its start or wait) with a semaphore view whose last transform
    is not an indexer."""
    stmt = case.statements[k]
    return isinstance(stmt, (DmaStart, DmaWait)) and any(
        v.transforms and not isinstance(v.transforms[-1], ir.At) for v in stmt.semaphores())


KNOWN_FINDINGS = (
    KnownFinding(
        "race-detector-misses-a-remote-copy-race",
        "0.6.2: the TPU interpreter's race detector (detect_races=True) reports no "
        "race for a remote copy into another device's buffer that nothing "
        "orders after that device's own use of it (only the kernel's start), "
        "which the model, and later releases' detector, call a race",
        symptoms=(("race-detection", r"^the race detector misses a race with a copy$"),),
        trigger=lambda case, k: isinstance(case.statements[k], (DmaStart, DmaWait))
        and case.statements[k].device_id is not None,
        example=ir.Case((ir.Ref("bool", ()), ir.Ref("bool", ()), ir.Ref("dma", ()), ir.Ref("dma", ())),
                        tuple(op(ir.View(0), ir.View(1), ir.View(3), ir.View(2),
                                 device_id=ir.MeshIndex(1)) for op in (DmaStart, DmaWait)),
                        # (the first has no race detection: it is there for the swallow
                        # test, whose semaphore plant needs a path that runs semaphores)
                        ("tpu_interpret", "tpu_interpret_eager"), devices=2)),
    KnownFinding(
        "tpu-interpret-copy-of-an-operand-in-no-memory-space",
        "0.7.0 to 0.9.2: the TPU interpreter fails on a copy from or to a "
        "kernel operand with no memory space (a pallas_call operand's default "
        "BlockSpec): the copy looks the buffer up in 'any' (HBM), where the "
        "interpreter never put it, and raises KeyError: ('any', buffer id, "
        "device, core) ('hbm' in 0.9.2); interpret=True (HLO interpreter) runs "
        "the same kernel",
        symptoms=(("valid-runs", r"CpuCallback error calling callback: KeyError: "
                                 r"\('(any|hbm)', \d+, \d+, \d+\)"),),
        trigger=_copy_of_an_operand_in_no_memory_space,
        example=ir.Case((ir.Ref("dma", ()), _DATA, _DATA),
                        _copied(ir.View(1), ir.View(2), ir.View(0)), ("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager")),
    KnownFinding(
        "copy-through-a-reshape-then-another-transform",
        "up to 0.11.1, discharge of a copy (make_async_copy) between views that "
        "are reshaped and then indexed or bitcast (x.reshape(1, 1).at[-1], "
        "x.reshape(1, 1).bitcast(jnp.uint16)) fails: ValueError 'Length of slice "
        "indices must match number of operand dimensions (2 vs ())', or "
        "IndexError: list index out of range, where a plain reshaped view is "
        "refused cleanly (an unsupported transform)",
        symptoms=tuple((oracle, r"^(ValueError: Length of slice indices must match number of "
                                r"operand dimensions|IndexError: list index out of range)")
                       for oracle in ("valid-runs", "invalid-rejected")),
        trigger=_copy_reshaped_then_transformed,
        example=ir.Case((ir.Ref("int16", ()), ir.Ref("int16", ()), ir.Ref("dma", ())), (
            DmaStart(*(ir.View(r, (ir.Reshape((1, 1)), ir.At((ir.Int(-1),)))) for r in (0, 1)),
                     ir.View(2)),
            DmaWait(*(ir.View(r, (ir.Reshape((1, 1)), ir.At((ir.Int(-1),)))) for r in (0, 1)),
                    ir.View(2))), ("abstract", "pallas_call"))),
    KnownFinding(
        "dma-semaphore-view-last-transform-not-indexer",
        "up to 0.10.0, a copy whose DMA semaphore is a view ending in a reshape, "
        "transpose or bitcast (sem.at[0].reshape(()), sem.T) fails as it traces: "
        "dma_start's abstract evaluation asks that last transform for "
        "get_indexer_shape, which only an indexer has (AttributeError), as "
        "check_sem_avals does for signal and wait (check-sem-avals-last-transform-not-indexer)",
        symptoms=(("valid-runs", NO_INDEXER_SHAPE), ("invalid-rejected", NO_INDEXER_SHAPE)),
        trigger=_semaphore_view_not_ending_in_an_index,
        example=ir.Case((ir.Ref("dma", ()), _DATA, _DATA),
                        _copied(ir.View(1), ir.View(2), ir.View(0, (ir.Transpose(()),))),
                        ("abstract", "pallas_call"))),
    KnownFinding(
        "dma-wait-src-sem-view-operand-count",
        "a wait on a copy with a src_sem (make_async_copy(x, y, sem.at[0], "
        "src_sem=sem.at[1]).wait()) fails to discharge with 'ValueError: "
        "safe_zip() argument 2 has length 5 but argument 0 has length 6' when "
        "either semaphore is a view: dma_wait_discharge_rule "
        "(jax/_src/pallas/mosaic/primitives.py) pads its new values for the "
        "src_sem with tree_util.tree_leaves(src_sem_aval), one leaf for a "
        "transformed ref, where the operands hold one per transform "
        "(_dma_tree_leaves, as every other operand is counted); two whole "
        "() semaphores work",
        symptoms=(("valid-runs", r"safe_zip\(\) argument 2 has length \d+ but argument 0 "
                                 r"has length \d+"),
                  ("invalid-rejected", r"safe_zip\(\) argument 2 has length \d+ but "
                                       r"argument 0 has length \d+"),
                  ("partial-discharge", r"safe_zip\(\) argument 2 has length \d+ but "
                                        r"argument 0 has length \d+")),
        trigger=_wait_with_a_src_sem_view,
        example=ir.Case((_SEMS, _DATA, _DATA), (
            *_copied(ir.View(1), ir.View(2), _AT0, _AT1),), paths=("abstract", "pallas_call")),
        severity=CRASH),
    KnownFinding(
        "tpu-interpret-on-wait-drops-unwaited-copy",
        "the TPU interpreter says nothing at kernel exit of a copy started and "
        "never waited on under its default dma_execution_mode='on_wait' (the "
        "copy never runs, as 'on_wait' documents, so its DMA semaphore stays "
        "0), where JAX's docs (docs/pallas/tpu/distributed.md, 'Failure modes': "
        "'If DMAs are started but the semaphores are not waited on, the "
        "program may crash due to non-zero semaphore states') and the same "
        "interpreter under dma_execution_mode='eager' report the count left "
        "('Semaphore ... has non-zero count ... at kernel exit: 12'); the "
        "destination is never written either",
        symptoms=(("left-over-counts", r"^a copy never waited on leaves no count at kernel exit"),),
        trigger=_start,
        example=ir.Case((ir.Ref("dma", ()), _DATA, _DATA), (
            DmaStart(ir.View(1), ir.View(2), ir.View(0)),), paths=("pallas_call", "tpu_interpret")),
        paths=("tpu_interpret",),
        severity=USABILITY),
    KnownFinding(
        "tpu-interpret-dma-view-not-only-indexed",
        "the TPU interpreter cannot copy through a view with a reshape, "
        "transpose or bitcast (make_async_copy(x.reshape(4, 2), y.reshape(4, 2), "
        "sem).start()): its dma_start callback fails with 'AttributeError: "
        "'ReshapeTransform' object has no attribute 'indices'' "
        "(interpret/utils.py to_range takes every transform for an indexer); "
        "the HLO interpreter copies it",
        symptoms=(("valid-runs", rf"AttributeError: '{view_class('Reshape', 'Transpose', 'Bitcast')}' "
                                 r"object has no attribute 'indices'"),),
        trigger=_copy_view_not_only_indexed,
        example=ir.Case((ir.Ref("dma", ()), _DATA, _DATA), (
            *_copied(ir.View(1, (ir.Reshape((2, 1)),)), ir.View(2, (ir.Reshape((2, 1)),)),
                     ir.View(0)),), paths=("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH,
        # (a maintainer's review: the one to_range that a load or store
        # through the same view meets too)
        same_as="tpu-interpret-reshaped-data-ref"),
    KnownFinding(
        "tpu-interpret-race-detection-wait-for-0",
        "with detect_races=True, the TPU interpreter fails on pl.semaphore_wait(sem, 0) "
        "of a semaphore nothing has signaled yet: 'assert clock is not None' "
        "(shared_memory.py, wait: the semaphore has no vector clock before its "
        "first signal), in either DMA mode, with or without a copy in flight; "
        "without race detection, or after a signal, the same wait passes (a "
        "copy program of the 30-minute campaign, seed 13, under the "
        "tpu_interpret_eager options). 0.6.2 asserts nothing: the missing "
        "clock is read, TypeError: 'NoneType' object is not subscriptable",
        symptoms=(("valid-runs", r"CpuCallback error calling callback: (AssertionError|"
                                 r"TypeError: 'NoneType' object is not subscriptable)"),),
        # (a wait for 0, static or read from dyn)
        trigger=lambda case, k: isinstance(case.statements[k], Wait) and not (
            case.statements[k].value.value),
        about=("semaphore",),
        example=ir.Case((ir.Ref("regular", ()), ir.Ref("dma", ()), _DATA, _DATA), (
            *_copied(ir.View(2), ir.View(3), ir.View(1)), Wait(ir.View(0), ir.Int(0))),
            paths=("tpu_interpret", "tpu_interpret_eager")),   # (the first has no race detection)
        paths=("tpu_interpret_eager",),
        severity=CRASH),
    KnownFinding(
        "tpu-interpret-dma-gather-view",
        "a copy through a view indexed by an integer array (x.at[idx] with idx "
        "a traced int32 vector), which a TensorCore cannot copy (no gather "
        "DMA), gets a bare TypeError from the TPU interpreter: 'Only scalar "
        "arrays can be converted to Python scalars', not the clean 'Advanced "
        "indexers are not supported on TPU' that a load or store through the "
        "same view gets: its dma_start callback converts every index with int() "
        "outside the try that load, store and swap have (interpret_pallas_call.py, "
        "dma_start); the HLO interpreter copies the gathered rows",
        symptoms=(("valid-runs", r"TypeError: Only scalar arrays can be converted to Python "
                                 r"scalars; got arr\.ndim=1"),),
        trigger=_copy_view_gathers,
        example=ir.Case((ir.Ref("dma", ()), _DATA, _DATA), (
            *_copied(*(ir.View(r, (ir.At((ir.IntArray((1, 0), True),)),)) for r in (1, 2)),
                     ir.View(0)),), paths=("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=USABILITY),
    _accepted("a regular or barrier semaphore, or a data ref, for its DMA semaphore",
              "dma_semaphore_kind", _invalid(
                  (ir.Ref("float32", (2, 2)), ir.Ref("regular", (2,))),
                  DmaStart(ir.View(0, (ir.At((ir.Int(0),)),)), ir.View(0, (ir.At((ir.Int(1),)),)),
                           ir.View(1, (ir.At((ir.Int(0),)),))), SEMAPHORE_KIND),
              "; only a wait on it says 'dma_wait requires a DMA semaphore'"),
    _accepted("a source and a destination of different shapes", "dma_shape", _invalid(
        (ir.Ref("float32", (4, 2)), ir.Ref("dma", ())),
        DmaStart(ir.View(0, (ir.At((ir.Slice(0, 1),)),)), ir.View(0, (ir.At((ir.Slice(1, 3),)),)),
                 ir.View(1)), SHAPE),
        "; the HLO interpreter broadcasts the source into the destination"),
    _accepted("a source and a destination of different dtypes", "dma_dtype", _invalid(
        (ir.Ref("float32", (2,)), ir.Ref("int32", (2,)), ir.Ref("dma", ())),
        DmaStart(ir.View(0), ir.View(1), ir.View(2)), DTYPE),
        "; the discharge rule then stores the source's dtype into the destination "
        "('dma_start returned a new value int32[2] for operand 1, a ref of float32[2]')",
        symptoms=(("aval-preserved", r"^dma_start returned a new value \w+\[[\d, ]*\] for "
                                     r"operand \d+, a ref of \w+\[[\d, ]*\]"),
                  # JAX 0.10: the abstract path's discharged program says so.
                  ("abstract-concrete", r"^final r\d+ is \w+\[[\d, ]*\]; abstract evaluation "
                                        r"promised")),
        consequences=(
            ("aval-preserved", r"^(run_scoped|pallas_call) returned a new value "
                               r"\w+\[[\d, ]*\] for operand \d+, a ref of \w+\[[\d, ]*\]"),)),
    _accepted("a static index past the end of its source or destination", "dma_out_of_bounds",
              _invalid((ir.Ref("float32", (2, 2)), ir.Ref("dma", ())),
                       DmaStart(ir.View(0, (ir.At((ir.Int(2),)),)), ir.View(0, (ir.At((ir.Int(0),)),)),
                                ir.View(1)), OUT_OF_BOUNDS),
              "; the HLO interpreter clamps the index (a load or store through the "
              "same view is refused)"),
    KnownFinding(
        "dma-start-discharge-loses-a-signal-to-one-semaphore",
        "a copy whose sem and src_sem are the same semaphore "
        "(make_async_copy(x, y, sem, src_sem=sem), or a remote copy with one "
        "semaphore for send and receive) counts one of its two completions on "
        "it, not both, when discharged (pl.pallas_call(..., interpret=True)): "
        "dma_start_discharge_rule (jax/_src/pallas/mosaic/primitives.py) "
        "computes the new dst_sem and the new src_sem each from the semaphore's "
        "old value and returns both, so the second overwrites the first; "
        "copy.wait() then takes both counts and leaves it at -n, not 0. The "
        "remote form, make_async_remote_copy(x, y, sem, sem, device_id=(me,)) "
        "with wait_send() and wait_recv() under shard_map, ends at -n the same "
        "way. The TPU interpreter (interpret=pltpu.InterpretParams()) counts "
        "both signals: start(); wait() completes and a third wait hangs. Mosaic "
        "lowers a local src_sem only for SparseCore push streams, so on a "
        "TensorCore the remote form is the one that compiles: on a TPU v5e "
        "(JAX 0.10.2) a remote copy to the device itself with one semaphore for "
        "send and receive left 0 after wait_send() and wait_recv(), and halted "
        "the core at exit after wait_recv() alone. Two views of one semaphore "
        "array (sem.at[0], src_sem=sem.at[1]) would lose an update the same "
        "way, but dma-wait-src-sem-view-operand-count fails such a wait first",
        symptoms=(("model-vs-path", r"^(read \d+( at [\w ]+ \d+)?|final r\d+\[[\d, ]*\]) is "
                                    r"-?\d+, expected -?\d+$"),
                  ("model-vs-path", r"^count left at kernel exit is ")),
        trigger=_on_a_semaphore_signalled_twice_by_one_copy,
        about=("dma", "semaphore"),   # a read or wait of that semaphore sees it
        # (a local copy's src_sem is public from 0.12.0; a remote copy's send
        # semaphore long before)
        example=ir.Case((_DATA, _DATA, ir.Ref("dma", ())), (
            *_copied(ir.View(0), ir.View(1), ir.View(2), ir.View(2)), Read(ir.View(2))),
            paths=("pallas_call",)),
        severity=WRONG_VALUE),
    KnownFinding(
        "tpu-interpret-ignores-dma-add",
        "the TPU interpreter runs a copy with add=True as a plain copy "
        "(make_async_copy(x, y, sem).start(add=True), pltpu.async_copy(..., "
        "add=True)): the destination ends as the source, in either DMA "
        "execution mode, where Mosaic's TensorCore lowering refuses add=True "
        "('DMA with add=True is not supported.') and so does discharge (an "
        "unsupported-table entry): interpret mode should refuse it too, not "
        "run what no TPU runs. (A cold review: the sum the fuzzer's model "
        "expected is defined by no TensorCore)",
        symptoms=(("model-vs-path", r"^final r\d+\[[\d, ]*\] is .*, expected"),),
        trigger=lambda case, k: isinstance(case.statements[k], DmaStart) and (
            case.statements[k].add),
        example=ir.Case((ir.Ref("dma", ()), _DATA, _DATA), (
            *_copied(ir.View(1), ir.View(2), ir.View(0), add=True),), paths=("tpu_interpret",)),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=USABILITY),
    KnownFinding(
        "mesh-device-id-not-dischargeable-on-0.10",
        "on JAX 0.10, discharge (discharge_state, and pl.pallas_call(..., "
        "interpret=True)) fails on a remote copy whose device_id is in mesh form "
        "(make_async_remote_copy(..., device_id={'x': i}), or a tuple with "
        "DeviceIdType.MESH) with \"TypeError: unsupported operand type(s) for ==: "
        "'DynamicJaxprTracer' and 'tuple'\": dma_start_partial_discharge_rule compares "
        "the all-gathered device ids with the id as given, not as a logical id. A "
        "LOGICAL scalar id works, and so does the TPU interpreter; 0.12 discharges "
        "it (and refuses a remote signal cleanly)",
        symptoms=(("valid-runs", r"TypeError: unsupported operand type\(s\) for ==: "
                                 r"'DynamicJaxprTracer' and 'tuple'"),),
        trigger=lambda case, k: isinstance(
            getattr(case.statements[k], "device_id", None), ir.MeshIndex),
        example=ir.Case((_DATA, _DATA, ir.Ref("dma", ()), ir.Ref("dma", ())), (
            DmaStart(ir.View(0), ir.View(1), ir.View(3), ir.View(2), device_id=ir.MeshIndex(1)),
            DmaWait(ir.View(0), ir.View(1), ir.View(3), ir.View(2), device_id=ir.MeshIndex(1))),
            ("pallas_call",), devices=2),
        paths=("abstract", "pallas_call")),
    KnownFinding(
        "tpu-interpret-remote-copy-of-64-bit-data",
        "under the jax.enable_x64(True) context manager, the TPU interpreter "
        "fails on a remote copy of 64-bit data to another device "
        "(make_async_remote_copy of an int64 or float64 ref with device_id the "
        "next device), in both DMA execution modes: the callback that delivers "
        "the data runs on another thread, where the (thread-local) context "
        "manager's setting does not reach, and returns it as 32 bits "
        "('CpuCallback error calling callback: RuntimeError: Incorrect output "
        "dtype for return value #1: Expected: int64, Actual: int32'). With the "
        "global flag (jax.config.update('jax_enable_x64', True)) the same "
        "kernel runs; so do a 32-bit copy and the HLO interpreter (found by the "
        "30-minute campaign of stop 24, seed 11). On 0.12.1 a local copy of "
        "int64 data in a kernel on a mesh of 2 devices fails too, and so does a "
        "jax.debug.print or jax.debug.callback of a float64 ref there "
        "('Expected: float64, Actual: float32'), and so does a plain load or "
        "store of an int64 ref (valid-runs-any-d19a6da8 again, from a "
        "pltpu.store); on one device, or with the global flag, they run",
        symptoms=(("valid-runs", r"Incorrect output dtype for return value #\d+: Expected: "
                                 r"(int64|float64|uint64), Actual: (int32|float32|uint32)"),),
        trigger=_calling_back_with_64_bits_on_a_mesh,
        about=("dma", "ref"),   # a debug callback is a ref statement
        example=ir.Case((ir.Ref("int64", (2,)), ir.Ref("int64", (2,)), ir.Ref("dma", ()),
                         ir.Ref("dma", ()), ir.Ref("barrier", (), memory_space=ir.COLLECTIVE)), (
            Signal(ir.View(4), ir.Int(1), device_id=ir.MeshIndex(-1)), Wait(ir.View(4), ir.Int(1)),
            DmaStart(ir.View(0), ir.View(1), ir.View(3), ir.View(2), device_id=ir.MeshIndex(1)),
            DmaWait(ir.View(0), ir.View(1), ir.View(3), ir.View(2), device_id=ir.MeshIndex(1))),
            ("tpu_interpret",), x64=True, devices=2),
        paths=("tpu_interpret", "tpu_interpret_eager"),
        severity=CRASH),
)

"""What each path is known not to support, and how to tell "unsupported"
from "broken".

A valid program that a path refuses as an entry of `TABLE` lists is recorded
as unsupported, not as a finding; so is an invalid one refused so before its
own mistake is seen (JAX does not say which of two errors comes first). Only listed refusals are tolerated: any
other NotImplementedError or "not supported" on a valid program is a finding
(symptom ``unsupported``; `says_unsupported` tells that symptom apart). An
entry tolerates a refusal only on the releases its example is refused on
(measured on every release: fuzz/suppressions/seen_on.py);
tests/test_differential.py::test_each_unsupported_entry_is_still_unsupported
replays each entry's example, so a JAX release that adds support fails that
test and the entry must go, and tests/test_suppressions.py plants another bug
beside each entry and checks that it is still reported.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fuzz import ir, paths
from fuzz.suppressions import seen_on
from fuzz.ops.base import view_class
from fuzz.ops.control import Loop
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.ref import AddUpdate, MaskedLoad, Swap
from fuzz.ops.ref.common import Iota, Mask, negative_static_index
from fuzz.ops.semaphore import Read, Signal, Wait

# How "this is not supported" reads in JAX's errors.
_SAYS_UNSUPPORTED = re.compile(
    r"^NotImplementedError|not (yet )?(supported|implemented)|"
    r"translation rule for primitive '\w+' not found", re.IGNORECASE)


@dataclass(frozen=True)
class Unsupported:
    id: str
    path: str
    match: str          # regex on "ExceptionType: first line"
    description: str
    example: ir.Case
    # What a refused case must have, where the error's words cannot tell this
    # refusal from others (a bare NotImplementedError); None: any case.
    when: Callable[[ir.Case], bool] | None = None
    # Which statements (case, number) the refusal is about, where the path
    # runs the rest of the case without them (`unmasked`); None: not known.
    about: Callable[[ir.Case, int], bool] | None = None


_S = ir.Ref("regular", (2,))
_AT1 = ir.View(0, (ir.At((ir.Int(1),)),))


def _case(sem, *body, paths):
    return ir.Case((sem,), tuple(body), paths)


# How discharge refuses a transposed view: 0.12 names the class, 0.10 the transform.
_TRANSPOSE = (r"NotImplementedError: (<class '[\w.]*TransposeTransform'>|"
              rf"Unsupported transform: {view_class('Transpose')})")


def _through_a_transpose(case: ir.Case, n: int) -> bool:
    """Statement ``n`` names a transposed view."""
    return any(isinstance(t, ir.Transpose) for v in ir.views(case.statements[n])
               for t in v.transforms)

TABLE: tuple[Unsupported, ...] = (
    Unsupported(
        "tpu-interpret-semaphore-read", "tpu_interpret",
        r"MLIR translation rule for primitive 'semaphore_read' not found for platform cpu",
        "the TPU interpreter has no CPU rule for semaphore_read",
        _case(_S, Read(_AT1), paths=("tpu_interpret",)),
        # (the rest runs there: its reads are never compared, `model_results`)
        about=lambda case, n: isinstance(case.statements[n], Read)),
    Unsupported(
        "tpu-interpret-nondecrementing-wait", "tpu_interpret",
        r"NotImplementedError: Non-decrementing wait is not supported",
        "the TPU interpreter refuses semaphore_wait(decrement=False)",
        _case(_S, Wait(_AT1, ir.Int(0), decrement=False), paths=("tpu_interpret",))),
    *(Unsupported(
        f"transpose-not-dischargeable-{path}", path,
        _TRANSPOSE,
        "a transposed view traces, but discharge (or the TPU interpreter) has no "
        "rule to write through it (a signal or wait, a store), or to index after it",
        _case(ir.Ref("regular" if paths.fact(path, "SEMAPHORES") == "real" else "int16", (2, 2)),
              Signal(ir.View(0, (ir.Transpose((1, 0)), ir.At((ir.Int(0), ir.Int(1))))),
                        ir.Int(1)),
              paths=(path,)),
        about=_through_a_transpose)
      for path in ("abstract", "run_state", "pallas_call", "tpu_interpret")),
    # Refs under jit hold data only: a store through a transposed view.
    *(Unsupported(
        f"transpose-not-dischargeable-{path}", path,
        _TRANSPOSE,
        "a transposed view of a jax.new_ref traces, but discharge has no rule to "
        "store through it",
        ir.Case((ir.Ref("int32", (2, 3)),),
                (Swap(ir.View(0, (ir.Transpose((1, 0)),)), Iota("int32", (3, 2))),),
                (path,)),
        about=_through_a_transpose) for path in ("jax_refs", "nested", "mesh_kernel")),
    *(Unsupported(
        f"addupdate-through-transpose-{path}", path,
        r"NotImplementedError: Unsupported transform for `addupdate`: TransposeTransform",
        "addupdate's discharge takes indexers and reshapes only, not a transposed view",
        ir.Case((ir.Ref("int32", (2, 3)),),
                (AddUpdate(ir.View(0, (ir.Transpose((1, 0)),)), Iota("int32", (3, 2))),),
                (path,)),   # 0.10 crashes instead: AttributeError
        about=lambda case, n: isinstance(case.statements[n], AddUpdate)
        and _through_a_transpose(case, n))
      for path in ("abstract", "run_state", "jax_refs", "nested", "pallas_call", "mesh_kernel")),
    # JAX up to 0.11.1 discharged no reshaped or bitcast view and only one indexer per view
    # (on mesh_kernel too, which runs from 0.11.0, with pltpu.TensorCoreMesh).
    *(Unsupported(
        f"{name}-not-dischargeable-{path}", path,
        rf"NotImplementedError: Unsupported transform: {view_class(name.capitalize())}\b",
        f"discharge up to 0.11.1 has no rule for a {name} view",
        ir.Case((ir.Ref("int32", (2, 2)),), (Swap(ir.View(0, (transform,)), value),), (path,)))
      for name, transform, value in (
          ("reshape", ir.Reshape((4,)), Iota("int32", (4,))),
          ("bitcast", ir.Bitcast("float32"), Iota("float32", (2, 2))))
      for path in ("abstract", "run_state", "jax_refs", "nested", "pallas_call", "mesh_kernel")),
    *(Unsupported(
        f"single-indexer-{path}", path,
        r"NotImplementedError: Only single indexer is supported",
        "JAX 0.10's discharge takes one indexer per view (x.at[i].at[j] is refused)",
        ir.Case((ir.Ref("int32", (2, 2)),), (AddUpdate(ir.View(0, (
            ir.At((ir.Int(0),)), ir.At((ir.Int(1),)))), Iota("int32", ())),), (path,)))
      for path in ("abstract", "run_state", "jax_refs", "nested", "pallas_call", "mesh_kernel")),
    # dma_start_discharge_rule raises before it looks at what is discharged.
    *(Unsupported(
        f"dma-add-not-dischargeable-{path}", path,
        r"NotImplementedError: DMA partial discharge add=True not yet implemented",
        "a copy started with add=True (accumulating into its destination) has no "
        "discharge: dma_start_discharge_rule refuses it, partial or not",
        # run_state takes no semaphore type: the int16 stand-in for one
        ir.Case((ir.Ref("int16" if paths.fact(path, "SEMAPHORES") == "stand-in" else "dma", ()),
                 ir.Ref("float32", (2,)),
                 ir.Ref("float32", (2,))),
                (DmaStart(ir.View(1), ir.View(2), ir.View(0), add=True),
                 DmaWait(ir.View(1), ir.View(2), ir.View(0))), (path,)))
      for path in ("abstract", "run_state", "pallas_call")),
    Unsupported(
        "remote-signal-not-dischargeable-pallas_call", "pallas_call",
        r"NotImplementedError: Remote signal not implemented",
        "the HLO interpreter (interpret=True) has no remote semaphore_signal: its "
        "discharge rule refuses a signal with a device_id",
        ir.Case((ir.Ref("regular", ()),), (
            Signal(ir.View(0), ir.Int(1), device_id=ir.MeshIndex(1)),
            Wait(ir.View(0), ir.Int(1))), ("pallas_call",), devices=2)),
    Unsupported(
        "tpu-interpret-advanced-indexer", "tpu_interpret",
        r"CpuCallback error calling callback: ValueError: Advanced indexers are not supported on TPU",
        "the TPU interpreter refuses an integer-array index in a kernel load or store, "
        "as Mosaic does",
        ir.Case((ir.Ref("int32", (2,)),), (Swap(ir.View(0, (
            ir.At((ir.IntArray((1,), True),)),)), Iota("int32", (1,))),), ("tpu_interpret",))),
    # Up to 0.12.0.1 this was an assertion failure, a known finding
    # (tpu-interpret-negative-static-index); 0.12.1 made it a deliberate bounds
    # error, as TPU does not normalize a negative index (jax-ml/jax#27490; on
    # a TPU v5e, JAX 0.10.2, `o_ref[:, -1] = v` aborted in Mosaic's layout
    # inference: "Check failed: offsets_[1].value_or(0) >= 0").
    Unsupported(
        "tpu-interpret-negative-static-index-out-of-bounds", "tpu_interpret",
        # (a copy's read or write: IndexError)
        r"CpuCallback error calling callback: (ValueError|IndexError): Out-of-bounds "
        r"(masked )?(swap|read|write|load|store) of",
        "the TPU interpreter refuses a load, store or copy with a negative static "
        "index (x[:, -1] = v) as out of bounds: TPU does not normalize a negative index",
        ir.Case((ir.Ref("int32", (1, 2)),), (Swap(ir.View(0, (
            ir.At((ir.Slice(), ir.Int(-1))),)), Iota("int32", (1,))),), ("tpu_interpret",)),
        when=lambda case: any(negative_static_index(s) for s in case.statements)),
    Unsupported(
        "tpu-interpret-masked-load", "tpu_interpret",
        r"NotImplementedError: masked load_p",
        "the TPU interpreter refuses a load with a mask, as Mosaic does",
        ir.Case((ir.Ref("int32", (2,)),), (
            MaskedLoad(ir.View(0), Mask((2,), 2), Iota("int32", (2,))),
            Swap(ir.View(0), ir.Result(0))), ("tpu_interpret",))),
    # Up to 0.7.1 the while rule refuses a cond with a ref effect with a bare
    # NotImplementedError, as other rules refuse other things: only a case
    # with a while loop (a fori_loop of a dynamic count is one) is taken.
    *(Unsupported(
        f"while-cond-reads-a-ref-{path}", path, r"^NotImplementedError: $",
        "discharge of a while_loop whose cond reads a ref (a trip count read "
        "from dyn) is refused up to 0.7.1 (_while_partial_discharge_rule)",
        ir.Case((ir.Ref("int32", (2,)),), (Loop(ir.Int(2, True), (
            Swap(ir.View(0), Iota("int32", (2,))),), via="while_loop"),), (path,)),
        when=lambda case: any(s.primitive == "while" for s in case.statements))
      for path in ("abstract", "run_state", "pallas_call")),
)

# The entries the running JAX release refuses as they say.
CURRENT = seen_on.only_seen("unsupported", TABLE)


def unmasked(case: ir.Case, refused) -> tuple[ir.Case, tuple[str, ...]] | None:
    """``case`` (valid) without the statements its refusals (``refused``: a
    report's (path, entry, error)) are about, and the paths that refused it:
    a path that refuses one transposed view runs none of the rest (a tenth
    of a one-minute campaign's cases, on each discharging path). None where
    no refusal says what it is about, or nothing well-formed is left."""
    about = [(path, e) for path, e, _ in refused if e.about is not None]
    drop = {n for _, e in about for n in range(len(case.statements)) if e.about(case, n)}
    if not case.valid or not drop or (kept := ir.without_statements(case, drop)) is None:
        return None
    return kept, tuple(dict.fromkeys(path for path, _ in about))


def says_unsupported(text: str) -> bool:
    return _SAYS_UNSUPPORTED.search(text) is not None


def classify(path: str, text: str, case: ir.Case) -> Unsupported | None:
    """The table entry for ``case``'s error ``text`` ("Type: first line") on
    ``path`` (or on the path it is a variant of: the same implementation,
    other options)."""
    for entry in CURRENT:
        if entry.path == paths.variant_of(path) and re.search(entry.match, text) and (
                entry.when is None or entry.when(case)):
            return entry
    return None


"""Findings in real, unpatched JAX on data-ref statements that the
properties already know about (matched by `fuzz.known_findings`)."""
from __future__ import annotations

from fuzz import ir
from fuzz.ops.base import KnownFinding
from fuzz.ops.ref.common import INTEGER, Iota, produced
from fuzz.ops.ref.swap import Swap


def _data_view_reshaped(case: ir.Case, k: int) -> bool:
    """A data statement through a view with a reshape or transpose."""
    stmt = case.body[k]
    return stmt.family == "ref" and any(
        isinstance(t, (ir.Reshape, ir.Transpose)) for t in stmt.view.transforms)


def _integer_value_of_another_dtype(case: ir.Case, k: int) -> bool:
    """A store of an integer array into an integer ref of another dtype."""
    stmt = case.body[k]
    value = getattr(stmt, "value", None)
    if isinstance(value, Iota):
        got = value.dtype
    elif isinstance(value, ir.Result):
        got = produced(case, value.stmt)[1]
    else:
        return False
    kind = case.refs[stmt.view.ref].kind
    return got != kind and got in INTEGER and kind in INTEGER


KNOWN_FINDINGS: tuple[KnownFinding, ...] = (
    KnownFinding(
        "swap-casts-integer-value-of-another-dtype",
        "storing an integer array into a ref of another integer dtype "
        "(x[...] = int32 array, x an int8 ref) is accepted and silently cast "
        "(wrapping), while a float of another dtype is refused ('Invalid dtype "
        "for `swap`'): _maybe_implicit_cast's condition is "
        "`weak and (float, float) or (int, int)`, so the weak-type check "
        "covers only floats",
        symptoms=(("invalid-rejected", r"^swap ran without error; expected ValueError "
                                       r"matching 'Invalid dtype for `swap`'"),),
        trigger=_integer_value_of_another_dtype,
        example=ir.Case((ir.Ref("int8", ()),), (Swap(ir.View(0), Iota("int32", ())),),
                        expect=ir.ExpectedError("ValueError", "Invalid dtype for `swap`", "swap")),
        jax_versions=((0, 12),)),
    KnownFinding(
        "tpu-interpret-reshaped-data-ref",
        "the TPU interpreter crashes on a get or swap through a reshaped (or "
        "transposed) data ref view: interpret utils' to_range assumes every "
        "transform is an indexer (AttributeError: 'ReshapeTransform' object "
        "has no attribute 'indices'), where discharge handles the view",
        symptoms=(("valid-runs", r"CpuCallback error calling callback: AttributeError: "
                                 r"'(Reshape|Transpose)Transform' object has no attribute 'indices'"),),
        trigger=_data_view_reshaped,
        example=ir.Case((ir.Ref("int32", (2, 2)),),
                        (Swap(ir.View(0, (ir.Reshape((4,)),)), Iota("int32", (4,))),),
                        paths=("tpu_interpret",)),
        jax_versions=((0, 12),)),
)

"""Findings in real, unpatched JAX on control statements that the properties
already know about (matched by `fuzz.known_findings`)."""
from __future__ import annotations

from fuzz import ir
from fuzz.ops.base import KnownFinding
from fuzz.ops.control.loop import Loop
from fuzz.ops.control.wrap import Wrap
from fuzz.ops.ref.common import Iota
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.swap import Swap

_STORES = ("swap", "addupdate", "masked_swap")


def _while_reading_a_ref_in_cond_and_body(case: ir.Case, k: int) -> bool:
    """A ``lax.while_loop`` whose condition reads ``dyn`` (a dynamic count;
    the eager harness passes ``dyn`` as a ``jax.Ref``) and whose body reads
    it too (a dynamic operand inside)."""
    stmt = case.statements[k]
    return (isinstance(stmt, Loop) and stmt.via == "while_loop" and stmt.count.dynamic
            and any(i.dynamic for i in ir.walk(stmt.body, (ir.Int, ir.IntArray))))


def _wrapping_a_store(*vias):
    """A `Wrap` (via one of ``vias``) with a data-ref store inside."""
    def trigger(case: ir.Case, k: int) -> bool:
        stmt = case.statements[k]
        return isinstance(stmt, Wrap) and stmt.via in vias and any(
            s.primitive in _STORES for s in ir.flat(stmt.body))
    return trigger


def _wrapped_store_example(via: str) -> ir.Case:
    view = ir.View(0, (ir.At((ir.Int(0),)),))
    return ir.Case((ir.Ref("int32", (2,)),), (Wrap(via, (Swap(view, Iota("int32", (), 1)),)),),
                   ("tpu_interpret",))


KNOWN_FINDINGS: tuple[KnownFinding, ...] = (
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
        jax_versions=((0, 12),)),
    KnownFinding(
        "tpu-interpret-store-inside-checkpoint-or-custom-vmap",
        "the TPU interpreter fails on a kernel that stores to a closed-over ref "
        "inside jax.checkpoint or a custom_vmap function: re-tracing the body, "
        "JAX builds an effects error message with a fake debug_info and raises "
        "AttributeError: 'Fake' object has no attribute 'arg_names' instead; "
        "interpret=True (HLO interpreter) runs the same kernel",
        symptoms=(("valid-runs", r"AttributeError: 'Fake' object has no attribute 'arg_names'"),),
        trigger=_wrapping_a_store("checkpoint", "custom_vmap"),
        example=_wrapped_store_example("checkpoint"),
        paths=("tpu_interpret",),
        jax_versions=((0, 12),)),
    KnownFinding(
        "tpu-interpret-store-inside-custom-vjp",
        "the TPU interpreter fails on a kernel that stores to a closed-over ref "
        "inside a jax.custom_vjp function: the store is bound on the "
        "interpreter's stand-in for the ref (an int16 array), which is not a "
        "Ref ('ShapedArray' object has no attribute 'inner_aval' through an "
        "indexer, '`swap` must be called on `Ref` types' without one)",
        symptoms=(("valid-runs", r"AttributeError: 'ShapedArray' object has no attribute "
                                 r"'inner_aval'|ValueError: `(swap|addupdate)` must be called on "
                                 r"`Ref` types: int16"),),
        trigger=_wrapping_a_store("custom_vjp"),
        example=_wrapped_store_example("custom_vjp"),
        paths=("tpu_interpret",),
        jax_versions=((0, 12),)),
)

"""A loop over a block: ``jax.lax.fori_loop`` (static bounds bind ``scan``,
a count from ``dyn`` binds ``while``), ``jax.lax.while_loop`` (``while``)
or ``jax.lax.scan`` (``scan``; a static length, ``reverse``, ``unroll``).
The refs the block uses are closed over; a scan may also take refs as
``xs``, and then its block sees, at step ``i``, the slice ``ref[i]`` of
each (`ir.Step`; in reverse, step ``i`` is the slice ``length - 1 - i``).
The model runs the block ``count`` times (none for a count below 1)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.control.common import (SlicingOp, operand_ints, reslices, sliceable,
                                     slicing_block, some_of)

VIA = ("fori_loop", "while_loop", "scan")


@st.composite
def _loops(draw, cls, refs, block, body, dynamic, can_slice):
    """A loop of `Loop.draws` (module-level: see strategies.programs._block)."""
    via = draw(st.sampled_from(VIA))
    count = draw(operand_ints(dynamic=dynamic and via != "scan"))
    xs = ()
    if via == "scan":
        count = ir.Int(max(count.value, 0))
        if can_slice and draw(st.integers(0, 3)):
            xs = draw(some_of(refs, can_slice))
            count = ir.Int(refs[xs[0]].shape[0])
    static = via == "scan" or via == "fori_loop" and not count.dynamic
    unroll = draw(st.sampled_from((1, 1, 2))) if static else 1
    reverse = via == "scan" and draw(st.booleans())
    inner = draw(slicing_block(block, body, refs, xs))
    return cls(count, inner, via, reverse, unroll, xs)


@dataclass(frozen=True)
class Loop(SlicingOp):
    count: ir.Int
    body: tuple[ir.Statement, ...]
    via: str = "fori_loop"
    reverse: bool = False   # scan only
    unroll: int = 1         # fori_loop with static bounds, and scan
    xs: tuple[int, ...] = ()   # scan only: refs it slices, the block seeing one slice a step
    tag = "loop"
    block_fields = ("body",)

    @property
    def primitive(self) -> str:
        static = self.via == "scan" or self.via == "fori_loop" and not self.count.dynamic
        return "scan" if static else "while"

    def check(self, case, n):
        if self.via not in VIA:
            raise ir.IRError(f"statement {n}: loop via {self.via!r}, not one of {VIA}")
        if self.via == "scan" and (self.count.dynamic or self.count.value < 0):
            raise ir.IRError(f"statement {n}: a scan's length is static and >= 0")
        if self.reverse and self.via != "scan":
            raise ir.IRError(f"statement {n}: only a scan runs in reverse")
        if not (isinstance(self.unroll, int) and self.unroll >= 1) or (
                self.unroll > 1 and self.primitive != "scan"):
            raise ir.IRError(f"statement {n}: unroll {self.unroll!r} (>= 1; > 1 for a scan only)")
        if self.xs and self.via != "scan":
            raise ir.IRError(f"statement {n}: only a scan takes refs as xs")
        self.check_slices(case, n, self.count.value)

    def lines(self, e, n):
        count = e.operand(self.count)
        name = f"loop{n}"
        unroll = f", unroll={self.unroll}" if self.unroll != 1 else ""
        match self.via:
            case "fori_loop":
                body = self.body_lines(e, self.body, n + 1, f"def {name}(i, carry):",
                                       "return carry")
                call = f"jax.lax.fori_loop(0, {count}, {name}, 0{unroll})"
            case "while_loop":
                body = self.body_lines(e, self.body, n + 1, f"def {name}(i):", "return i + 1")
                call = f"jax.lax.while_loop(lambda i: i < {count}, {name}, 0)"
            case _:
                # The slices take the names of the refs they slice.
                names = [f"r{r}" for r in self.xs]
                param, xs = (names[0], names[0]) if len(names) == 1 else (
                    ("x", f"({', '.join(names)},)") if names else ("x", "None"))
                body = self.body_lines(e, self.body, n + 1, f"def {name}(carry, {param}):",
                                       "return carry, None")
                if len(names) > 1:
                    body.insert(1, (f"    {', '.join(names)} = x", n))
                reverse = ", reverse=True" if self.reverse else ""
                call = f"jax.lax.scan({name}, 0, {xs}, length={count}{reverse}{unroll})"
        return [*body, (call, n)]

    def refused_under(self, transform, path):
        # _scan_batching_rule: "vmap of a scan over a Ref batched along its
        # leading axis is not supported"; the eager program batches every
        # ref, along axes that include the leading one. Inside a kernel,
        # pallas_call's own batching rule takes the scan.
        if self.xs and transform == "vmap" and path.CONTEXT != "pallas":
            return "vmap of a scan over a ref batched along its leading axis is not supported"
        return super().refused_under(transform, path)

    def steps(self):
        order = range(max(self.count.value, 0))
        return list(reversed(order) if self.reverse else order)

    def vary(self):
        varied = super().vary()
        if self.count.dynamic:
            return replace(varied, count=ir.Int(self.count.value % 3 + 1, True))
        return varied

    def simpler(self, case):
        for r in self.xs:
            # That ref closed over, its first slice taken at every step.
            yield replace(self, xs=tuple(x for x in self.xs if x != r),
                          body=ir.bound(self.body, (r,), 0))
        if self.xs:
            return
        if self.via != "fori_loop":
            yield replace(self, via="fori_loop", reverse=False,
                          unroll=1 if self.count.dynamic else self.unroll)
        if self.reverse:
            yield replace(self, reverse=False)
        if self.unroll != 1:
            yield replace(self, unroll=1)
        for count in ir.simpler_ints(self.count):
            yield replace(self, count=count)

    def complexity(self) -> int:
        return (self.via != "fori_loop") + self.reverse + (self.unroll != 1) + bool(self.xs)

    @classmethod
    def draws(cls, refs, *, body=(), block=None, dynamic=True, **options):
        if block is None:
            return None
        can_slice = sliceable(refs)

        return _loops(cls, refs, block, body, dynamic, can_slice).filter(lambda loop: not reslices(loop))

"""A block wrapped in a higher-order function and called once: ``jax.jit``
(binds ``jit``), ``jax.checkpoint`` (``remat2``), ``jax.custom_vjp``
(``custom_vjp_call``), ``jax.custom_batching.custom_vmap``
(``custom_vmap_call``), ``jax.shard_map`` on a one-device mesh
(``shard_map``) or ``pl.run_scoped`` with nothing to allocate
(``run_scoped``: a scope nested anywhere, whose rule discharges the refs it
closes over). The refs the block uses are closed over (passed in, for
shard_map, which takes no closed-over ref), so each primitive's discharge
rule must carry their updates out; the model runs the block.

A function (not a custom_vjp, which JAX does not let take a view, nor a
run_scoped, which takes none) may instead be called on views: ``xs``, each
passed as ``r.at[at]`` (``at`` static or from ``dyn``), which the block
then uses under the ref's own name (`ir.Step`), as a one-step scan would."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import compat, ir
from fuzz.ops.control.common import (SlicingOp, blocks, reslices, sliceable, slicing_block,
                                     some_of)

# via -> the primitive it binds
PRIMITIVES = {"jit": "jit", "checkpoint": "remat2", "custom_vjp": "custom_vjp_call",
              "custom_vmap": "custom_vmap_call", "shard_map": "shard_map",
              "run_scoped": "run_scoped"}
# Where shard_map does not run (by the path's ``CONTEXT``), as JAX says:
# eagerly ("Eager shard_map doesn't support jax.Ref arguments yet"); inside a
# Pallas kernel it is no Pallas feature.
_NO_SHARD_MAP = {"eager": "eager shard_map takes no jax.Ref (JAX says: use it under jit)",
                 "pallas": "shard_map is not a Pallas kernel feature"}
# Where pl.run_scoped does not run: outside a Pallas kernel it has no
# evaluation rule, and refs as values under jit are no kernel.
_NO_RUN_SCOPED = dict.fromkeys(("refs", "eager"), "pl.run_scoped exists only inside Pallas kernels")
# Those that take views as arguments, from the release that has the feature
# named (jax.custom_vjp: "TransformedRefs cannot be abstractified";
# run_scoped calls its function with what it allocates).
TAKE_VIEWS = {**dict.fromkeys(("jit", "checkpoint", "shard_map"),
                              "jax._src.state.types.tracing_registry"),
              "custom_vmap": "jax._src.custom_batching.tracing_registry"}


@dataclass(frozen=True)
class Wrap(SlicingOp):
    via: str
    body: tuple[ir.Statement, ...]
    xs: tuple[int, ...] = ()    # refs passed as the views r.at[at], which the block sees
    at: ir.Int = ir.Int(0)
    tag = "wrap"
    block_fields = ("body",)

    @property
    def primitive(self) -> str:
        return PRIMITIVES[self.via]

    def not_applicable(self, path):
        return {"shard_map": _NO_SHARD_MAP, "run_scoped": _NO_RUN_SCOPED}.get(
            self.via, {}).get(path.CONTEXT) or super().not_applicable(path)

    def needs(self):
        views = (TAKE_VIEWS[self.via],) if self.xs and self.via in TAKE_VIEWS else ()
        return (*views, *(("jax.shard_map",) if self.via == "shard_map" else ()))

    def refused_under(self, transform, path):
        # A custom rule covers only the function's explicit arguments, and
        # these close over their refs. Inside a kernel, pallas_call's own
        # batching rule takes the custom_vmap.
        if self.via == "custom_vmap" and transform == "vmap" and path.CONTEXT != "pallas":
            return "a custom_vmap function may not close over batched values"
        if self.via == "run_scoped" and transform == "partial-discharge":
            return "partly discharged, a run_scoped stays, and it has no evaluation rule"
        if transform == "vmap" and path.CONTEXT != "pallas" and any(
                v.ref in self.xs and any(isinstance(t, ir.At) for t in v.named)
                for v in ir.walk(self.body, ir.View)):
            # state's get/swap/addupdate batching rules take one indexer.
            return ("vmap of a view passed in and indexed again: 'Batching with multiple "
                    "indexers not supported' (JAX says so)")
        if self.via == "shard_map" and transform == "mesh":
            # The kernel runs inside the case's own shard_map.
            return "a shard_map inside a shard_map needs the context mesh (JAX says so)"
        if self.via == "custom_vmap" and transform == "reverse-mode":
            return ("custom_vmap functions do not support reverse-mode autodiff "
                    "(JAX says so)")
        if self.via == "custom_vjp" and transform == "grad":
            return ("a custom_vjp function is differentiated only with respect to its "
                    "arguments, not values it closes over (JAX says so)")
        return None

    def steps(self):
        return [self.at.value]

    def check(self, case, n):
        if self.via not in PRIMITIVES:
            raise ir.IRError(f"statement {n}: wrap via {self.via!r}, not one of {tuple(PRIMITIVES)}")
        if self.xs and self.via not in TAKE_VIEWS:
            raise ir.IRError(f"statement {n}: a {self.via} takes no views, only "
                             f"{tuple(TAKE_VIEWS)} do")
        self.check_slices(case, n, None)
        if not self.xs and self.at != ir.Int(0):
            raise ir.IRError(f"statement {n}: a row .at[{self.at.value}] of no view")
        if any(not 0 <= self.at.value < case.refs[r].shape[0] for r in self.xs):
            raise ir.IRError(f"statement {n}: views .at[{self.at.value}] of refs {self.xs}, "
                             "not all of which have that row")
        if self.via == "shard_map" and _maps_inside(self.body):
            # JAX: "The context mesh ... should match the mesh passed to shard_map".
            raise ir.IRError(f"statement {n}: a shard_map inside a shard_map takes the context "
                             "mesh, not a mesh of its own")

    def lines(self, e, n):
        name = f"wrap{n}"
        # A view passed in takes the name of its ref, as a scan's slice does.
        # shard_map takes the refs (and dyn, where the block reads it) as
        # arguments, those a loop or pipeline slices too; the parameters
        # shadow the names the block uses.
        used = {v.ref for v in ir.walk(self.body, ir.View)} | {
            r for s in ir.flat(self.body) for r in s.slices()} | set(self.xs)
        dyn = ["dyn"] if self.via == "shard_map" and any(
            i.dynamic for i in ir.walk(self.body, (ir.Int, ir.IntArray))) else []
        refs = sorted(used) if self.via == "shard_map" else self.xs
        lines = self.body_lines(e, self.body, n + 1,
                                f"def {name}({', '.join([*dyn, *(f'r{i}' for i in refs)])}):")
        at = e.operand(self.at) if self.xs else ""   # (after the block's: dyn's order)
        args = ", ".join([*dyn, *(f"r{i}.at[{at}]" if i in self.xs else f"r{i}" for i in refs)])
        call = {
            "jit": [f"jax.jit({name})({args})"],
            "checkpoint": [f"jax.checkpoint({name})({args})"],
            # Nothing in, nothing out: the rules only carry the refs' updates.
            "custom_vjp": [f"{name} = jax.custom_vjp({name})",
                           f"{name}.defvjp(lambda: ({name}(), None), lambda res, g: ())",
                           f"{name}()"],
            "custom_vmap": [f"{name} = jax.custom_batching.custom_vmap({name})",
                            f"{name}.def_vmap(lambda axis_size, in_batched{', *views' * bool(args)}: "
                            f"({name}({'*views' * bool(args)}), None))",
                            f"{name}({args})"],
            "run_scoped": [f"pl.run_scoped({name})"],
            "shard_map": [f"jax.shard_map({name}, mesh=jax.make_mesh((1,), ('i',)), "
                          f"in_specs=jax.sharding.PartitionSpec(), "
                          f"out_specs=jax.sharding.PartitionSpec())({args})"],
        }[self.via]
        return [*lines, *((line, n) for line in call)]

    def vary(self):
        varied = super().vary()
        # Another row every view has: row 0 (a row 0 stays).
        return replace(varied, at=ir.Int(0, True)) if self.at.dynamic else varied

    def simpler(self, case):
        for r in self.xs:
            # That ref closed over, its row taken inside (the last one: no
            # row to pass, so no operand).
            rest = tuple(x for x in self.xs if x != r)
            yield replace(self, xs=rest, at=self.at if rest else ir.Int(0),
                          body=ir.bound(self.body, (r,), self.at.value))
        if self.at.dynamic:
            yield replace(self, at=ir.Int(self.at.value))
        if self.via != "jit":   # (jit takes views too)
            yield replace(self, via="jit")

    def complexity(self) -> int:
        return (self.via != "jit") + bool(self.xs) + self.at.dynamic

    @classmethod
    def draws(cls, refs, *, body=(), block=None, dynamic=True, **options):
        if block is None:
            return None
        # A wrapper this release cannot discharge (custom_vmap before 0.12:
        # "No state discharge rule implemented") is not drawn.
        vias = tuple(v for v, p in PRIMITIVES.items() if compat.has_discharge_rule(p))
        if not vias:
            return None
        return _wraps(cls, refs, block, body, vias, dynamic).filter(
            lambda w: not (w.via == "shard_map" and _maps_inside(w.body)) and not reslices(w))


@st.composite
def _wraps(draw, cls, refs, block, body, vias, dynamic):
    """A wrap of `Wrap.draws`: closing over its refs, or (one in three, where
    it takes views) called on views of some."""
    via = draw(st.sampled_from(vias))
    can_slice = sliceable(refs)
    if not (via in TAKE_VIEWS and compat.has(TAKE_VIEWS[via]) and can_slice) or draw(
            st.integers(0, 2)):
        return cls(via, draw(blocks(block, body, 1))[0])
    xs = draw(some_of(refs, can_slice))
    row = draw(st.integers(0, min(refs[r].shape[0] for r in xs) - 1)) if all(
        refs[r].shape[0] for r in xs) else None
    if row is None:
        return cls(via, draw(blocks(block, body, 1))[0])
    at = ir.Int(row, dynamic and draw(st.booleans()))
    return cls(via, draw(slicing_block(block, body, refs, xs)), xs, at)


def _maps_inside(block) -> bool:
    return any(isinstance(s, Wrap) and s.via == "shard_map" for s in ir.flat(block))

"""``pltpu.emit_pipeline`` over a block, inside a Pallas kernel: a grid of
one axis, a step per slice of its refs ``xs`` along their leading axis.
Each ref is both an input and an output of the pipeline, one block
(``BlockSpec((None, ...))``) a step: the block's input buffer is copied
into its output buffer, which the statements then use under the ref's own
name (`ir.Step`), and which the pipeline copies back. So the model runs
the block once a step on that step's slices, as a scan over the refs does.

The pipeline needs a TPU's tiling rules, which a CPU has not: the call
runs under an abstract mesh of a TPU v6e, which is how JAX lets a CPU
trace it. ``inline`` says how it is discharged: as the ``emit_pipeline``
primitive (``jax_use_emit_pipeline_primitive``; the rules
``emit_pipeline`` and ``pipeline_body``, whose ``pipeline_body`` re-traces
each step), or inlined into its copies and waits (``dma_start``,
``dma_wait``, ``run_scoped``)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import compat, ir
from fuzz.ops.control.common import SlicingOp, reslices, sliceable, slicing_block, some_of
from fuzz.ops.control.loop import Loop

# The only device a CPU may trace a pipeline for (DISCHARGE_SURFACE.md).
MESH = ("jax.sharding.AbstractMesh((), (), abstract_device=jax.sharding.AbstractDevice("
        "'TPU v6 lite', 1, 'tpu'))")
_FLAG = "jax._src.config.use_emit_pipeline_primitive"
_KERNELS_ONLY = dict.fromkeys(("refs", "eager"),   # by the path's CONTEXT
                              "emit_pipeline exists only inside Pallas TPU kernels")


@st.composite
def _pipelines(draw, cls, refs, block, body, can_slice):
    """A pipeline of `Pipeline.draws`."""
    xs = draw(some_of(refs, can_slice))
    # Up to 0.11.1 the primitive has no discharge rule: a pipeline is inlined.
    inline = st.booleans() if compat.has_discharge_rule("emit_pipeline") else st.just(True)
    return cls(refs[xs[0]].shape[0], xs, draw(slicing_block(block, body, refs, xs)), draw(inline))


@dataclass(frozen=True)
class Pipeline(SlicingOp):
    length: int                 # the grid's one axis: the refs' leading one
    xs: tuple[int, ...]
    body: tuple[ir.Statement, ...]
    inline: bool = False
    tag = "pipeline"
    public_call = "pltpu.emit_pipeline"
    pallas_api = True
    report_note = (
        "pltpu.emit_pipeline reads the device it tiles its blocks for; a CPU has "
        "no TPU, so the snippet names one with `jax.sharding.use_abstract_mesh` "
        "(an `AbstractDevice('TPU v6 lite', ...)`), for which it traces as it "
        "would on that TPU")
    block_fields = ("body",)
    allocates_semaphores = True   # (its buffers' DMA semaphores)

    @property
    def primitive(self) -> str:
        return "dma_start" if self.inline else "emit_pipeline"

    def steps(self):
        return list(range(self.length))

    def not_applicable(self, path):
        return _KERNELS_ONLY.get(path.CONTEXT) or super().not_applicable(path)

    def needs(self):
        # Inlined is how 0.10.1 (before the primitive's flag) runs every pipeline.
        flag = () if self.inline else (_FLAG,)
        return (*flag, "jax.sharding.use_abstract_mesh", "jax.sharding.AbstractDevice(platform)")

    def refused_under(self, transform, path):
        if transform == "partial-discharge":
            return ("a pipeline allocates its buffers with run_scoped, which partly "
                    "discharged stays, and has no evaluation rule")
        return None

    def check(self, case, n):
        if not (self.xs and isinstance(self.length, int) and self.length >= 1):
            raise ir.IRError(f"statement {n}: a pipeline's grid takes a step or more, "
                             "each a slice of the refs it is given")
        self.check_slices(case, n, self.length)
        if any(case.refs[r].memory_space == "smem" for r in self.xs):
            raise ir.IRError(f"statement {n}: a pipeline copies its blocks to VMEM, not SMEM")

    def lines(self, e, n):
        name, refs = f"pipe{n}", [f"r{r}" for r in self.xs]
        inputs = [f"{r}_in" for r in refs]
        body = self.body_lines(e, self.body, n + 1, f"def {name}({', '.join(inputs + refs)}):")
        body[1:1] = [(f"    {r}[...] = {i}[...]", n) for r, i in zip(refs, inputs)]
        if not self.body:
            body.pop()   # its "pass": the copies are the body
        specs = ", ".join(_spec(e.case.refs[r]) for r in self.xs)
        # The primitive is opt-in (from 0.10.2; off by default): an inlined
        # pipeline needs no flag, and so no JAX internals in its snippet.
        flag = f"{_FLAG}(True), " if compat.has(_FLAG) and not self.inline else ""
        return [*body,
                (f"with {flag}jax.sharding.use_abstract_mesh({MESH}):", n),
                (f"    pltpu.emit_pipeline({name}, grid=({self.length},), "
                 f"in_specs=[{specs}], out_specs=[{specs}])({', '.join(refs + refs)})", n)]

    def simpler(self, case):
        if len(self.xs) > 1:
            for r in self.xs:
                yield replace(self, xs=tuple(x for x in self.xs if x != r),
                              body=ir.bound(self.body, (r,), 0))
        # The same steps as a scan over the refs: no pipeline to read.
        yield Loop(ir.Int(self.length), self.body, "scan", xs=self.xs)

    def complexity(self) -> int:
        return 2

    @classmethod
    def draws(cls, refs, *, body=(), block=None, **options):
        if block is None or not compat.has("jax.sharding.AbstractDevice(platform)"):
            return None
        can_slice = sliceable(refs, lambda r: r.shape[0] >= 1 and r.memory_space != "smem")
        if not can_slice:
            return None

        return _pipelines(cls, refs, block, body, can_slice).filter(lambda p: not reslices(p))


def _spec(ref: ir.Ref) -> str:
    """One slice of ``ref`` a step: the leading axis squeezed."""
    zeros = ", ".join(["i", *["0"] * (len(ref.shape) - 1)]) + ("," if len(ref.shape) == 1 else "")
    return f"pl.BlockSpec({(None, *ref.shape[1:])!r}, lambda i: ({zeros}))"

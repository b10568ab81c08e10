"""The control family: statements that nest others (loops, conds, pl.when,
higher-order wrappers, pipelines), each discharged by its own rule (scan,
while, cond, jit, remat2, custom_vjp_call, custom_vmap_call, emit_pipeline)
around the rules of the statements inside."""
from fuzz.ops.control.cond import Cond
from fuzz.ops.control.loop import Loop
from fuzz.ops.control.pipeline import Pipeline
from fuzz.ops.control.when import When
from fuzz.ops.control.wrap import Wrap
from fuzz.ops.control.known import KNOWN_FINDINGS

OPS = (Loop, Cond, When, Wrap, Pipeline)
MISTAKES = ()

__all__ = ["Cond", "KNOWN_FINDINGS", "Loop", "MISTAKES", "OPS", "Pipeline", "When", "Wrap"]

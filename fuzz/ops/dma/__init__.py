"""The DMA family: local async copies (start and wait) between views of
data refs, counted on DMA semaphores."""
from fuzz.ops.dma import order, patterns
from fuzz.ops.dma.start import DmaStart
from fuzz.ops.dma.wait import DmaWait
from fuzz.ops.dma.known import KNOWN_FINDINGS
from fuzz.ops.dma.mistakes import MISTAKES

OPS = (DmaStart, DmaWait)
# A program drawn with copies gets their waits before use (sometimes
# mutated); one on a mesh gets a whole pattern of communication.
COMPLETED = {DmaStart: order.completed}
ON_MESH = {DmaStart: patterns.on_mesh}

__all__ = ["COMPLETED", "KNOWN_FINDINGS", "MISTAKES", "ON_MESH", "OPS", "DmaStart", "DmaWait"]

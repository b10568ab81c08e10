"""The DMA family: local async copies (start and wait) between views of
data refs, counted on DMA semaphores."""
from fuzz.ops.dma.start import DmaStart
from fuzz.ops.dma.wait import DmaWait
from fuzz.ops.dma.known import KNOWN_FINDINGS
from fuzz.ops.dma.mistakes import MISTAKES

OPS = (DmaStart, DmaWait)

__all__ = ["KNOWN_FINDINGS", "MISTAKES", "OPS", "DmaStart", "DmaWait"]

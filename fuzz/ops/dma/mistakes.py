"""The mistakes a DMA statement can make, each with the clean error a user
should get (the names match `DmaOp.mistakes`)."""
from __future__ import annotations

MISTAKES = ()

"""The semaphore family: signal, wait and read of (views of) semaphores."""
from fuzz.ops.semaphore.read import Read
from fuzz.ops.semaphore.signal import Signal
from fuzz.ops.semaphore.wait import Wait
from fuzz.ops.semaphore.known import KNOWN_FINDINGS
from fuzz.ops.semaphore.mistakes import MISTAKES

OPS = (Signal, Wait, Read)

__all__ = ["KNOWN_FINDINGS", "MISTAKES", "OPS", "Read", "Signal", "Wait"]

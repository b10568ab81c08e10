"""The data-ref family: get, swap and addupdate of (views of) data refs."""
from fuzz.ops.ref.addupdate import AddUpdate
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.swap import Swap
from fuzz.ops.ref.known import KNOWN_FINDINGS
from fuzz.ops.ref.mistakes import MISTAKES

OPS = (Get, Swap, AddUpdate)

__all__ = ["AddUpdate", "Get", "KNOWN_FINDINGS", "MISTAKES", "OPS", "Swap"]

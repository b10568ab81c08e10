"""The data-ref family: get, swap, addupdate and masked loads and stores of
(views of) data refs, and debug callbacks and prints of whole refs."""
from fuzz.ops.ref.addupdate import AddUpdate
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.inspect import Inspect
from fuzz.ops.ref.masked_load import MaskedLoad
from fuzz.ops.ref.masked_store import MaskedStore
from fuzz.ops.ref.swap import Swap
from fuzz.ops.ref.known import KNOWN_FINDINGS
from fuzz.ops.ref.mistakes import MISTAKES

OPS = (Get, Swap, AddUpdate, MaskedLoad, MaskedStore, Inspect)

__all__ = ["AddUpdate", "Get", "Inspect", "KNOWN_FINDINGS", "MISTAKES", "MaskedLoad", "MaskedStore", "OPS",
           "Swap"]

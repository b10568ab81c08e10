"""A block wrapped in a higher-order function and called once: ``jax.jit``
(binds ``jit``), ``jax.checkpoint`` (``remat2``), ``jax.custom_vjp``
(``custom_vjp_call``) or ``jax.custom_batching.custom_vmap``
(``custom_vmap_call``). The refs the block uses are closed over, so each
primitive's discharge rule must carry their updates out; the model runs the
block."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import compat, ir
from fuzz.ops.control.common import ControlOp, blocks

# via -> the primitive it binds
PRIMITIVES = {"jit": "jit", "checkpoint": "remat2", "custom_vjp": "custom_vjp_call",
              "custom_vmap": "custom_vmap_call"}


@dataclass(frozen=True)
class Wrap(ControlOp):
    via: str
    body: tuple[ir.Statement, ...]
    tag = "wrap"
    block_fields = ("body",)

    @property
    def primitive(self) -> str:
        return PRIMITIVES[self.via]

    def check(self, case, n):
        if self.via not in PRIMITIVES:
            raise ir.IRError(f"statement {n}: wrap via {self.via!r}, not one of {tuple(PRIMITIVES)}")

    def lines(self, e, n):
        name = f"wrap{n}"
        lines = self.body_lines(e, self.body, n + 1, f"def {name}():")
        call = {
            "jit": [f"jax.jit({name})()"],
            "checkpoint": [f"jax.checkpoint({name})()"],
            # Nothing in, nothing out: the rules only carry the refs' updates.
            "custom_vjp": [f"{name} = jax.custom_vjp({name})",
                           f"{name}.defvjp(lambda: ({name}(), None), lambda res, g: ())",
                           f"{name}()"],
            "custom_vmap": [f"{name} = jax.custom_batching.custom_vmap({name})",
                            f"{name}.def_vmap(lambda axis_size, in_batched: ({name}(), None))",
                            f"{name}()"],
        }[self.via]
        return [*lines, *((line, n) for line in call)]

    def executed(self):
        return [0]

    def run(self, memory, n):
        return memory.run(self.body, n + 1)

    def simpler(self, case):
        if self.via != "jit":
            yield replace(self, via="jit")

    def complexity(self) -> int:
        return self.via != "jit"

    @classmethod
    def draws(cls, refs, *, body=(), block=None, **options):
        if block is None:
            return None
        # A wrapper this release cannot discharge (custom_vmap before 0.12:
        # "No state discharge rule implemented") is not drawn.
        vias = tuple(v for v, p in PRIMITIVES.items() if compat.has_discharge_rule(p))
        return st.builds(lambda via, b: cls(via, b[0]), st.sampled_from(vias),
                         blocks(block, body, 1))

"""``jax.debug.callback(f, x, ...)`` or ``jax.debug.print("{}", x, ...)`` of
one or more whole data refs: the debug primitives' discharge rules
(``debug_callback``, ``debug_print``) read the refs and must leave them as
they are. The callback ignores what it gets and the print goes to stdout, so
only the invariants of the discharge (avals, effects) and the refs' contents
after are checked. Several refs let a discharge be asked for some of its
operands but not others (a `pl.run_scoped` ref beside an operand: run_scoped's
rule keeps its scoped refs)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import strategies as st

from fuzz import ir
from fuzz.ops.ref.common import RefOp

VIA = ("callback", "print")
MAX_VIEWS = 3


@dataclass(frozen=True)
class Inspect(RefOp):
    """``view`` is the first ref inspected, ``others`` the rest (in argument
    order; distinct refs). The first is a field of its own, so a case written
    when an inspection took one view reads as it did, and what reads a ref
    statement's ``view`` (the minimizer, known findings) keeps working."""
    view: ir.View
    via: str = "callback"
    others: tuple[ir.View, ...] = ()
    tag = "inspect"
    reads_only = True

    @property
    def views(self) -> tuple[ir.View, ...]:
        return (self.view, *self.others)

    @property
    def primitive(self) -> str:
        return f"debug_{self.via}"

    def check(self, case, n):
        for view in self.views:
            RefOp.check(replace(self, view=view, others=()), case, n)
            if view.named:
                raise ir.IRError(f"statement {n}: the debug primitives take a whole ref "
                                 "(or a step's slice of one)")
        if self.via not in VIA:
            raise ir.IRError(f"statement {n}: inspect via {self.via!r}, not one of {VIA}")
        refs = [v.ref for v in self.views]
        if len(set(refs)) < len(refs):
            raise ir.IRError(f"statement {n}: inspect names a ref twice ({refs})")

    def mistakes(self, case) -> set[str]:
        return set().union(*(RefOp.mistakes(replace(self, view=v, others=()), case)
                             for v in self.views))

    def source(self, e) -> str:
        refs = ", ".join(e.view(v) for v in self.views)
        if self.via == "print":
            text = ", ".join(f"r{v.ref} = {{}}" for v in self.views)
            return f'jax.debug.print("{text}", {refs})'
        return f"jax.debug.callback(lambda {'*' if self.others else ''}x: None, {refs})"

    def run(self, memory, n):
        return None

    def simpler(self, case):
        views = self.views
        if len(views) > 1:
            for k in range(len(views)):
                rest = views[:k] + views[k + 1:]
                yield replace(self, view=rest[0], others=rest[1:])
        if self.via != "callback":
            yield replace(self, via="callback")

    def complexity(self) -> int:
        return (self.via != "callback") + len(self.others)

    @classmethod
    def draws(cls, refs, *, body=(), among=None, **options):
        usable = [i for i, r in enumerate(refs) if not r.is_semaphore
                  and (among is None or i in among)]
        if not usable:
            return None
        which = st.lists(st.sampled_from(usable), min_size=1,
                         max_size=min(MAX_VIEWS, len(usable)), unique=True)
        return st.builds(lambda rs, via: cls(ir.View(rs[0]), via, tuple(map(ir.View, rs[1:]))),
                         which, st.sampled_from(VIA))

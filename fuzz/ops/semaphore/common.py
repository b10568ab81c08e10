"""What the semaphore ops share: a ()-shaped view of a semaphore, the kinds
each op takes, and the mistakes they can all make."""
from __future__ import annotations

from hypothesis import strategies as st

from fuzz import ir
from fuzz.elements import names_twice
from fuzz.ops.base import Op
from strategies.transforms import TRANSFORM_KINDS, transform_chains

SIGNAL_WAIT_KINDS = ("regular", "barrier", "int16")
READ_KINDS = SIGNAL_WAIT_KINDS + ("dma",)


class SemaphoreOp(Op):
    family = "semaphore"
    pallas_api = True
    kinds = SIGNAL_WAIT_KINDS   # the ref kinds the primitive takes

    def counted(self):
        return (self.view,)

    def refused_under(self, transform, path):
        if transform == "grad":   # e.g. "Differentiation rule for 'semaphore_read' not implemented"
            return "JAX differentiates no semaphore primitive"
        return None

    def moved(self, memory, n, p: int, by: int) -> str | None:
        """Move count ``p`` of the op's ref by ``by`` (`fuzz.model.Memory.move`).
        Through a view that names the count twice (s.at[[0, 0]].at[0]) the
        move has no meaning: discharge writes the view back with one
        scatter, and which duplicate wins JAX leaves unspecified, for a
        semaphore as for a data ref (`fuzz.elements.names_twice`)."""
        if names_twice(memory.case.refs, self.view):
            return (f"statement {n} moves a count through a view that names it twice: "
                    "which update wins is not specified")
        return memory.move(n, self.view.ref, p, by)

    def amount(self) -> ir.Int | None:
        """The count operand (inc / value), if the op has one."""
        return None

    def mistakes(self, case) -> set[str]:
        refs, found = case.refs, set()
        if refs[self.view.ref].kind not in self.kinds:
            found.add("wrong_dtype")
        try:
            if ir.view_shape(refs, self.view) != ():
                found.add("non_scalar_view")
        except ir.IRError:
            found.add("out_of_bounds")
        for t in self.view.transforms:
            if isinstance(t, ir.Bitcast):
                found.add("bitcast")
            if isinstance(t, ir.At) and any(isinstance(i, ir.Slice) and i.step is not None
                                            and i.step < 1 for i in t.indices):
                found.add("negative_step")
        amount = self.amount()
        if amount is not None and not -2**31 <= amount.value < 2**31:
            found.add("overflow")
        return found

    @classmethod
    def draws(cls, refs, *, body=(), among=None, dynamic=True, max_chain=3, transforms=None):
        usable = [i for i, r in enumerate(refs) if 0 not in r.shape and r.kind in cls.kinds
                  and (among is None or i in among)]
        if not usable:
            return None
        earlier = tuple(n for n, s in enumerate(body)
                        if s.produces_value and s.value_type(refs) == ((), "int32"))
        return scalar_views(refs, usable, dynamic=dynamic, max_chain=max_chain,
                            transforms=transforms).flatmap(
            lambda view: cls.with_view(view, dynamic=dynamic, earlier=earlier))

    @classmethod
    def with_view(cls, view: ir.View, *, dynamic: bool, earlier: tuple[int, ...] = ()
                  ) -> st.SearchStrategy:
        """Statements of this kind on ``view`` (a valid, ()-shaped one);
        ``earlier`` numbers the statements whose int32 scalar values an
        amount may be."""
        raise NotImplementedError


def scalar_views(refs, usable, *, dynamic, max_chain, transforms):
    kinds = TRANSFORM_KINDS if transforms is None else transforms
    return st.sampled_from(usable).flatmap(lambda ref: transform_chains(
        refs[ref].shape, max_length=max_chain, dynamic=dynamic, kinds=kinds).map(
        lambda chain: ir.View(ref, chain)))


def counts(values=None, *, dynamic=True) -> st.SearchStrategy[ir.Int]:
    """Amounts for ``inc`` / ``value``: small counts mostly, any int32
    sometimes, static or dynamic. Shrinks towards static 0.

    >>> counts().example()
    Int(value=2, dynamic=True)
    """
    values = st.integers(0, 3) | st.integers(-2**31, 2**31 - 1) if values is None else values
    if not dynamic:
        return values.map(ir.Int)
    return st.builds(ir.Int, values, st.booleans())

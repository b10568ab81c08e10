"""What the data-ref ops share: the values they store, how a view is split
for ``ref[idx]`` syntax, and how statements over data refs are drawn.

Typing follows JAX's ``ref_swap`` (jax/_src/state/primitives.py): the value
must have exactly the indexed shape (no broadcasting) and the ref's dtype;
a weakly typed Python scalar of the same kind (int for an integer ref, float
for a floating one) is converted (``_maybe_implicit_cast``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar, Union

import numpy as np
from hypothesis import strategies as st

from fuzz import elements, ir
from fuzz.ops.base import Op
from strategies.transforms import TRANSFORM_KINDS, at_indexers, transform_chains

INTEGER = ("int8", "int16", "int32", "uint8", "uint16", "uint32", "int64")
FLOATING = ("float16", "bfloat16", "float32", "float64")


def _counting(shape, start) -> str:
    """Source of ``start, start + 1, ...`` in C order over ``shape`` (int32),
    computed in the kernel: a NumPy constant would be a captured constant,
    which pallas_call refuses ("pass them as inputs")."""
    numbers = f"jax.lax.iota(jnp.int32, {math.prod(shape)}).reshape({tuple(shape)!r})"
    return f"{numbers} + {int(start)}" if start else numbers


def _counted(shape, start) -> np.ndarray:
    """The model's `_counting`."""
    return np.arange(math.prod(shape), dtype=np.int64).reshape(shape) + start


@dataclass(frozen=True)
class Iota:
    """An array constant: ``start, start + 1, ...`` in C order, of ``dtype``
    (for bool: whether each is odd)."""
    dtype: str
    shape: tuple[int, ...]
    start: int = 0
    tag: ClassVar[str] = "iota"

    def source(self, e) -> str:
        numbers = _counting(self.shape, self.start)
        if self.dtype == "bool":
            return f"({numbers}) % 2 == 1"
        return f"({numbers}).astype({e.dtype(self.dtype)})"

    def array(self) -> np.ndarray:
        numbers = _counted(self.shape, self.start)
        return numbers % 2 == 1 if self.dtype == "bool" else numbers.astype(
            elements.dtype(self.dtype))


@dataclass(frozen=True)
class Scalar:
    """A Python scalar (weakly typed in JAX)."""
    value: bool | int | float
    tag: ClassVar[str] = "scalar"

    def source(self, e) -> str:
        return repr(self.value)


@dataclass(frozen=True)
class Fill:
    """An int32 array of ``shape`` filled with one integer operand: read from
    ``dyn`` when dynamic (data that enters the kernel through a ref), else
    a constant."""
    operand: ir.Int
    shape: tuple[int, ...] = ()
    tag: ClassVar[str] = "fill"
    dtype: ClassVar[str] = "int32"   # what ``dyn`` holds

    def source(self, e) -> str:
        x = e.operand(self.operand)
        return f"jnp.full({tuple(self.shape)!r}, {x}, jnp.int32)" if self.shape or not \
            self.operand.dynamic else x

    def array(self) -> np.ndarray:
        return np.full(self.shape, self.operand.value, np.int32)


Value = Union[Iota, Scalar, ir.Result, Fill]


@dataclass(frozen=True)
class Mask:
    """A bool array constant for a masked load or store: lane ``k`` (C order)
    is on when ``(k + phase) % period == 0``, flipped by ``invert``. Period 1
    is every lane on (what shrinking heads for)."""
    shape: tuple[int, ...]
    period: int = 1
    phase: int = 0
    invert: bool = False
    tag: ClassVar[str] = "mask"

    def __post_init__(self):
        if not (isinstance(self.period, int) and self.period >= 1):
            raise ir.IRError(f"mask period {self.period!r} must be an int >= 1")

    def source(self, e) -> str:
        lanes = _counting(self.shape, self.phase)
        return f"({lanes}) % {int(self.period)} {'!=' if self.invert else '=='} 0"

    def array(self) -> np.ndarray:
        return (_counted(self.shape, self.phase) % self.period == 0) != self.invert

    def simpler(self):
        if self.invert:
            yield Mask(self.shape, self.period, self.phase)
        if self.period != 1:
            yield Mask(self.shape)
        if self.phase:
            yield Mask(self.shape, self.period, 0, self.invert)


def masks(shape: tuple[int, ...]) -> st.SearchStrategy[Mask]:
    return st.builds(Mask, st.just(tuple(shape)), st.integers(1, 4), st.integers(0, 3),
                     st.booleans())


def broadcastable(shape: tuple[int, ...]) -> st.SearchStrategy[tuple[int, ...]]:
    """Shapes that broadcast to ``shape`` (leading dimensions dropped, some set
    to 1)."""
    return st.integers(0, len(shape)).flatmap(lambda drop: st.tuples(*(
        st.sampled_from((d, 1)) for d in shape[drop:])))


def value_source(e, v: Value) -> str:
    return e.result(v) if isinstance(v, ir.Result) else v.source(e)


def value_of(memory, v: Value, kind: str) -> tuple[np.ndarray, bool]:
    """The model's value of operand ``v`` and whether it is weakly typed;
    a weak scalar is already converted to ``kind``, as JAX converts it."""
    if isinstance(v, ir.Result):
        return memory.values[v.stmt], False
    if isinstance(v, Scalar):
        return np.asarray(v.value).astype(elements.dtype(kind)), True
    return v.array(), False


def kind_of(x) -> str:
    return "bool" if isinstance(x, bool) else "float" if isinstance(x, float) else "int"


class RefOp(Op):
    family = "ref"

    def ref_kind(self, refs) -> str:
        """The dtype the statement sees: its view's (`ir.view_dtype`)."""
        return ir.view_dtype(refs, self.view)

    def check(self, case, n):
        if case.refs[self.view.ref].is_semaphore:
            raise ir.IRError(f"statement {n}: {self.tag} of a semaphore")

    def refused_under(self, transform, path):
        # jax/_src/state/primitives.py, _batch_indexer: a pl.ds slice whose
        # start is batched (vmap-stack batches dyn) raises "No support for
        # vmapping over nontrivial slices just yet".
        if transform == "vmap" and any(isinstance(i, ir.Ds) and i.start.dynamic
                                       for v in ir.views(self) for t in v.transforms
                                       if isinstance(t, ir.At) for i in t.indices):
            return "JAX does not yet vmap a pl.ds slice whose start is batched (JAX says so)"
        return None

    def vary(self):
        """Another value from ``dyn`` (a `Fill`'s lowest bit flipped)."""
        return ir.replace_nodes(self, Fill, lambda f: Fill(ir.Int(f.operand.value ^ 1, True), f.shape)
                                if f.operand.dynamic else f)

    def mistakes(self, case) -> set[str]:
        try:
            ir.view_shape(case, self.view)
        except ir.IRError:
            return {"data_out_of_bounds"}
        return set()


def negative_static_index(stmt) -> bool:
    """Whether ``stmt`` reads or writes a ref through a view with a negative
    static index (``x[:, -1]``, a copy from ``x.at[:, -1]``)."""
    return any(isinstance(i, ir.Int) and not i.dynamic and i.value < 0
               for v in ir.views(stmt) for t in v.transforms if isinstance(t, ir.At)
               for i in t.indices)


def written(memory, n: int, view: ir.View, new: np.ndarray) -> None:
    """Store ``new`` at ``view``'s positions (no position twice), recording
    statement ``n`` as the writer of each element it changed."""
    flat = memory.elements(view)
    pos = memory.where(view).reshape(-1)
    new = np.asarray(new, dtype=flat.dtype).reshape(-1)
    changed = flat[pos].view(np.uint8).reshape(len(pos), -1) != new.view(np.uint8).reshape(len(pos), -1)
    flat[pos] = new
    memory.writers[view.ref].reshape(-1)[pos[changed.any(axis=1)]] = n


def unspecified_store(memory, n: int, view: ir.View) -> str | None:
    """Why statement ``n``'s store to ``view`` has no meaning
    (`fuzz.elements.names_twice`), or None."""
    if elements.names_twice(memory.case.refs, view):
        return f"statement {n} stores twice to one element: which store wins is not specified"
    return None


def value_mistakes(case, view, value) -> set[str]:
    """What is wrong with storing ``value`` to ``view`` (shape, dtype)."""
    kind, shape = ir.view_dtype(case, view), ir.view_shape(case, view)
    if isinstance(value, (Iota, ir.Result, Fill)):
        try:
            got_shape, got_kind = (produced(case, value.stmt) if isinstance(value, ir.Result)
                                   else (value.shape, value.dtype))
        except ir.IRError:
            return set()   # the statement it names makes its own mistake
        found = set() if got_shape == shape else {"value_shape"}
        return found | (set() if got_kind == kind else {"value_dtype"})
    found = set() if shape == () else {"value_shape"}
    fits = (kind_of(value.value) == "bool" and kind == "bool"
            or kind_of(value.value) == "int" and kind in INTEGER
            or kind_of(value.value) == "float" and kind in FLOATING)
    return found | (set() if fits else {"value_dtype"})


# --- draws --------------------------------------------------------------------

def data_ref_numbers(refs, among) -> list[int]:
    """The data refs (numbers) among ``among`` (None: all) with an element."""
    return [i for i, r in enumerate(refs) if not r.is_semaphore and 0 not in r.shape
            and (among is None or i in among)]


@st.composite
def _data_views(draw, refs, usable, allowed, dynamic, max_chain, prefer_last_at):
    """A view of `data_views`."""
    ref = draw(st.sampled_from(usable))
    shape = refs[ref].shape
    # (a quarter of the preferring draws any chain: valid views too)
    if not prefer_last_at or draw(st.integers(0, 3)) == 0:
        chain = draw(transform_chains(shape, max_length=max_chain, dynamic=dynamic,
                                      scalar=False, kinds=allowed, dtype=refs[ref].kind))
        return ir.View(ref, chain)
    chain = draw(transform_chains(shape, max_length=max_chain, dynamic=dynamic, scalar=False,
                                  kinds=tuple(k for k in allowed if k != "at"),
                                  dtype=refs[ref].kind))
    after = ir.view_shape(refs, ir.View(ref, chain))
    if "at" in allowed and after and 0 not in after and draw(st.booleans()):
        chain += (draw(at_indexers(after, dynamic=dynamic)),)
    return ir.View(ref, chain)


def data_views(refs, *, among, dynamic, max_chain, transforms, prefer_last_at=False):
    """Views of the data refs among ``refs`` (any shape, in bounds); with
    ``prefer_last_at``, mostly of at most one indexer, which comes last: the
    one view addupdate's discharge takes (any other it refuses, a known
    finding: `addupdate-through-two-indexers`)."""
    usable = data_ref_numbers(refs, among)
    if not usable:
        return None
    allowed = tuple(TRANSFORM_KINDS if transforms is None else transforms)

    return _data_views(refs, usable, allowed, dynamic, max_chain, prefer_last_at)


def views_and_values(refs, body, *, among, dynamic, max_chain, transforms, prefer_last_at=False):
    """(`data_views`, `earlier_values` of ``body``) for an op's draws, or None
    when no data ref is among ``among``."""
    views = data_views(refs, among=among, dynamic=dynamic, max_chain=max_chain,
                       transforms=transforms, prefer_last_at=prefer_last_at)
    return None if views is None else (views, earlier_values(body, refs))


def read_back(refs, body, among, usable=lambda view: True) -> st.SearchStrategy | None:
    """(number, view) of an earlier statement in ``body`` that read a value
    of its data view's shape and dtype (a get, a masked load, a swap's old
    value), the view ``usable`` for the op storing it back there
    (``x[v] = f(x[v])``): the data flow kernels are made of, which drawing a
    view and then a value that fits it gives too rarely. None if there is none."""
    found = [(n, s.view) for n, s in enumerate(body)
             if s.produces_value and isinstance(getattr(s, "view", None), ir.View)
             and not refs[s.view.ref].is_semaphore and (among is None or s.view.ref in among)
             and usable(s.view)
             and s.value_type(refs) == (ir.view_shape(refs, s.view), ir.view_dtype(refs, s.view))]
    return st.sampled_from(found) if found else None


def values(refs, view: ir.View, earlier) -> st.SearchStrategy:
    """Values a store to ``view`` takes: an array constant of the view's shape
    and the ref's dtype, a Python scalar for a ()-shaped view, the value of an
    ``earlier`` statement ((number, shape, dtype) triples) that fits, or for
    an int32 ref an operand from ``dyn`` (`Fill`)."""
    kind, shape = ir.view_dtype(refs, view), ir.view_shape(refs, view)
    options = [st.builds(Iota, st.just(kind), st.just(shape), st.integers(0, 20))]
    if shape == ():
        python = {"bool": st.booleans(), "float": st.integers(0, 20).map(float)}
        options.append(python.get("bool" if kind == "bool" else "float" if kind in FLOATING
                                  else "int", st.integers(0, 20)).map(Scalar))
    fits = [n for n, s, d in earlier if s == shape and d == kind]
    if fits:
        options.append(st.sampled_from(fits).map(ir.Result))
    if kind == "int32":
        options.append(st.builds(Fill, st.builds(ir.Int, st.integers(-20, 20), st.booleans()),
                                 st.just(shape)))
    return st.one_of(options)


def masked_indexable(refs, view: ir.View) -> bool:
    """Whether the masked load/store discharge rules take ``view``
    (``_load_discharge_rule`` in jax/_src/pallas/primitives.py): its last
    indexer is unit-stride slices and ints, or integer indices for every
    dimension and nothing else; any other raises NotImplementedError."""
    if not view.transforms or not isinstance(view.transforms[-1], ir.At):
        return True
    indices = view.transforms[-1].indices
    if any(isinstance(i, ir.IntArray) for i in indices):
        before = ir.view_shape(refs, ir.View(view.ref, view.transforms[:-1]))
        return (len(indices) == len(before)
                and all(isinstance(i, (ir.Int, ir.IntArray)) for i in indices))
    return all(i.step in (None, 1) for i in indices if isinstance(i, ir.Slice))


def constant_like(case, r: ir.Result) -> Iota:
    """A constant of the type of the value ``r`` names, for the minimizer:
    counting from 1, since adding or storing zeros often changes nothing."""
    shape, dtype = produced(case, r.stmt)
    return Iota(dtype, shape, 1)


def produced(case, n: int) -> tuple[tuple, str]:
    """(shape, dtype) of the value statement ``n`` of ``case`` gives."""
    return case.statements[n].value_type(case)


def earlier_values(body, refs) -> list[tuple[int, tuple, str]]:
    """(statement number, shape, dtype) of each value ``body`` produces."""
    return [(n, *s.value_type(refs)) for n, s in enumerate(body) if s.produces_value]

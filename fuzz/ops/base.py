"""What every op module provides, and the records families share.

An op is a `fuzz.ir.Statement` subclass (the node, plain data) that also
knows how it is written (``source``), what it means (``run``), how it is
drawn (``draws``), what is wrong with it (``mistakes``) and how it gets
simpler (``simpler``). Defining the class registers it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator

from hypothesis import strategies as st

from fuzz import ir

Trigger = Callable[[ir.Case, int], bool]


class Op(ir.Statement):
    """Interface of a statement kind (class attributes ``tag``, ``primitive``,
    ``family`` come from `ir.Statement`)."""

    # Whether the statement only reads the refs it names (a copy in flight
    # may read them at the same time: fuzz/ops/dma/common.py).
    reads_only: ClassVar[bool] = False
    # The public function a kernel calls for the statement, as a report's
    # title names it ("pltpu.emit_pipeline"); None for plain indexing, or
    # where the call varies.
    public_call: ClassVar[str | None] = None
    # Whether the statement is Pallas API (pltpu.load, pl.when, emit_pipeline,
    # semaphores, copies): plain JAX code over jax.Ref has only the others
    # (`strategies.programs.plain_programs`).
    pallas_api: ClassVar[bool] = False
    # What a reader of a snippet with this statement must know to trust it
    # (a stand-in the snippet needs on CPU), said in its report; None: nothing.
    report_note: ClassVar[str | None] = None

    def source(self, e) -> str:
        """The statement as one line of Python, through emitter ``e``
        (`fuzz.emit.Source`: ``e.view``, ``e.operand``, ...)."""
        raise NotImplementedError

    def lines(self, e, n: int) -> list[tuple[str, int]]:
        """The statement's lines, each with the statement it belongs to (a
        control statement's nested lines belong to the nested statements)."""
        return [(line, n) for line in self.source(e).splitlines()]

    def run(self, memory, n: int) -> str | None:
        """Apply the statement (number ``n``) to `fuzz.model.Memory`; return
        why the program has no meaning from here on, or None."""
        raise NotImplementedError

    def effect(self) -> int:
        """What the statement adds to the count it names (semaphores only)."""
        return 0

    def mistakes(self, case: ir.Case) -> set[str]:
        """Names of the `Mistake`s this statement of ``case`` makes (empty: valid)."""
        return set()

    def simpler(self, case: ir.Case) -> Iterator[ir.Statement]:
        """Simpler variants of this statement of ``case``, by its own operands
        (views are simplified generically by the minimizer)."""
        return iter(())

    def vary(self) -> ir.Statement:
        """The same statement with other dynamic amounts (never other views):
        the second batch element of vmap-stack."""
        return self

    def complexity(self) -> int:
        """Extra features that make this statement harder to read (0: none)."""
        return 0

    @classmethod
    def draws(cls, refs, *, body=(), among=None, **options) -> st.SearchStrategy | None:
        """Valid statements of this kind over ``refs`` (those numbered in
        ``among``, default all), following ``body`` (whose values it may use),
        or None when none of the refs can take one. ``options``: ``dynamic``,
        ``max_chain``, ``transforms``."""
        return None


@dataclass(frozen=True)
class Mistake:
    """One kind of invalid program: ``draw(refs)`` gives a strategy of
    (a new ref, a statement over it as ref number ``len(refs)``, the clean
    error a user should get); or of (a tuple of new refs, numbered from
    ``len(refs)``, a statement over them, the error). The minimizer keeps the set of mistakes a case
    makes (each op's ``mistakes``) unchanged, by these same names."""
    name: str
    draw: Callable[[tuple], st.SearchStrategy]


# A view transform's class as JAX names it in errors: ReshapeTransform from
# 0.9.1, RefReshaper up to 0.9.0.1 (so for Transpose and Bitcast).
_OLD_VIEW_CLASS = {"Reshape": "RefReshaper", "Transpose": "RefTransposer", "Bitcast": "RefBitcaster"}


def view_class(*kinds: str) -> str:
    """A regex for the class of a view transform of ``kinds``, on every release.

    >>> view_class("Reshape")
    '(ReshapeTransform|RefReshaper)'
    """
    return "(" + "|".join([f"{k}Transform" for k in kinds]
                          + [_OLD_VIEW_CLASS[k] for k in kinds]) + ")"


# What a semaphore-checking abstract eval raises (check_sem_avals, and
# dma_start's up to 0.10.0) when a view's last transform is not an indexer.
NO_INDEXER_SHAPE = (rf"AttributeError: '{view_class('Reshape', 'Transpose', 'Bitcast')}' "
                    r"object has no attribute 'get_indexer_shape'")


@dataclass(frozen=True)
class KnownFinding:
    id: str
    description: str
    symptoms: tuple[tuple[str, str], ...]        # (oracle, message regex)
    example: ir.Case
    # Does statement k of a case have what the bug needs?
    trigger: Trigger
    consequences: tuple[tuple[str, str], ...] = ()
    paths: tuple[str, ...] = ()   # only failures on these paths (default: any)
    # The trigger is about the whole case (it ignores its statement), so any
    # statement, of any family, may carry it.
    case_level: bool = False
    # The statement families it is about (default: its own; semaphore and
    # data-ref entries, both of those).
    about: tuple[str, ...] = ()
    # A maintainer's review of it (docs/known_review.md): its class
    # (`fuzz.severity`; "" leaves it to the oracle), the entry whose root
    # cause it shares (its report is that one's), and what its title must
    # own up to ("internal API": it shows only through jax._src; an opt-in
    # flag it needs).
    severity: str = ""
    same_as: str = ""
    caveat: str = ""

"""The statement kinds, one module each, in a folder per family.

Importing this package registers every statement kind with the IR (see
`fuzz.ir.Statement`): its node, how it is written as source, what it means
in the model, its valid draws, its mistakes and its simplifications all live
in the op's own module. A family's ``__init__`` lists its ops, its known
findings and its mistakes, and may give an op hooks that take a whole drawn
program: ``COMPLETED`` (what the op needs around it put in, e.g. a copy's
waits) and ``ON_MESH`` (a pattern of communication on a mesh), each
``{op: hook}``. Adding a statement kind is adding a module to a family.
"""
from __future__ import annotations

from fuzz.ops import control, dma, ref, semaphore
from fuzz.ops.base import KnownFinding, Mistake, Op

FAMILIES = (semaphore, ref, control, dma)

__all__ = ["FAMILIES", "KnownFinding", "Mistake", "Op", "completion", "finding_families",
           "known_findings", "mesh_pattern", "mistakes", "ops"]


def ops() -> tuple[type[Op], ...]:
    """Every statement kind, family by family."""
    return tuple(op for family in FAMILIES for op in family.OPS)


def known_findings() -> tuple[KnownFinding, ...]:
    return tuple(k for family in FAMILIES for k in family.KNOWN_FINDINGS)


def finding_families() -> dict[str, str]:
    """The family (an op's ``family``, the package's name) whose statements
    each known finding is about, by id."""
    return {k.id: family.__name__.rsplit(".", 1)[-1]
            for family in FAMILIES for k in family.KNOWN_FINDINGS}


def mistakes() -> dict[str, Mistake]:
    """Every mistake an invalid program can make, by name."""
    return {m.name: m for family in FAMILIES for m in family.MISTAKES}


def completion(op: type[Op]):
    """``hook(body, refs)``, a strategy of a drawn program's body with what
    ``op`` needs around it put in; None if its family gives it none."""
    return next((f.COMPLETED[op] for f in FAMILIES if op in getattr(f, "COMPLETED", {})), None)


def mesh_pattern(op: type[Op]):
    """``hook(refs, body, devices)``, a strategy of (refs to add, statements
    to put in at the top level) on a mesh; None if its family gives ``op`` none."""
    return next((f.ON_MESH[op] for f in FAMILIES if op in getattr(f, "ON_MESH", {})), None)

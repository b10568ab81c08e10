"""Findings in real, unpatched JAX that the properties already know about.

A failure that matches an entry is counted, not raised, so CI stays green
while the bug lives; tests/test_known_findings.py replays each entry's example
as a strict expected failure, so a JAX fix turns CI red and the entry must go.

An entry matches the *cause*, not the neighbourhood: a failure is an instance
of it only when its message fits one of the entry's `symptoms` (patterns
specific to that bug) *and* the statement the failure is pinned to
(`fuzz.blame`; for a wrong value, the statement that wrote it last) has the
entry's `trigger`. A failure pinned to no statement (an invalid program that
ran, a whole-program comparison) needs a statement with the trigger whose
primitive is the failure's. `consequences` are what the same bug breaks
further down: they match only in a report where a symptom matched too, and
only on that statement's ref, at or after it.
"""
from __future__ import annotations

import dataclasses
import re

from fuzz import ir, ops
from fuzz.suppressions import seen_on
from fuzz.ops import KnownFinding

# Each family lists its own entries (fuzz/ops/<family>/known.py).
ALL_KNOWN: tuple[KnownFinding, ...] = ops.known_findings()
# The entries whose examples show them on the running JAX release (measured
# on every release: fuzz/suppressions/seen_on.py).
KNOWN = seen_on.only_seen("known", ALL_KNOWN)
BY_ID = {k.id: k for k in ALL_KNOWN}

# The control family's entries are about control statements, the others'
# about the statements over views (an entry of one of those may be about a
# statement of the other: a transposed view is refused alike).
FAMILY = ops.finding_families()


def root_id(k: KnownFinding) -> str:
    """The root cause ``k`` is a face of: the entry it names in ``same_as``
    (a maintainer's review: one fix mends both), else its own id."""
    return k.same_as or k.id


def _hits(patterns, failure) -> bool:
    return any(failure.oracle == o and re.search(rx, failure.message)
               for o, rx in patterns)


def trigger_statements(k: KnownFinding, failure) -> list[int]:
    """The statements ``failure`` is about that have ``k``'s trigger: the one
    it is pinned to (or a control statement it is nested in, or, pinned to a
    control statement, one nested in it), or, pinned to none, those of its
    primitive."""
    case = failure.case
    if case is None:
        return []
    if failure.statement is not None:
        at = failure.statement
        if at >= len(case.statements):
            return []
        inside = range(at + 1, at + ir.size(case.statements[at]))
        return [n for n in (at, *ir.enclosing(case.body, at), *inside)
                if has_trigger(k, case, n)]
    return [n for n, stmt in enumerate(case.statements)
            if failure.primitive in (ir.primitive(stmt), "?") and has_trigger(k, case, n)]


# The statement families an entry of each family is about, unless it says
# (`KnownFinding.about`): a view's bug may show through a semaphore or a
# data statement alike.
_ABOUT = {"semaphore": ("semaphore", "ref"), "ref": ("semaphore", "ref")}


def has_trigger(k: KnownFinding, case: ir.Case, n: int) -> bool:
    """Statement ``n`` is of the kind ``k`` is about and has its trigger. A
    trigger that reads a view's shape where an invalid case has none (a
    bitcast a (2,) int16 ref cannot take) finds no trigger there."""
    family = FAMILY[k.id]
    about = k.about or _ABOUT.get(family, (family,))
    try:
        return (k.case_level or case.statements[n].family in about) and k.trigger(case, n)
    except ir.IRError:
        return False


def with_trigger(k: KnownFinding, case: ir.Case) -> list[int]:
    """The statements of ``case`` with ``k``'s trigger."""
    return [n for n in range(len(case.statements)) if has_trigger(k, case, n)]


def _downstream(k: KnownFinding, failure, roots: list[int]) -> bool:
    """A consequence on the ref of a root (a statement where a symptom of
    ``k`` matched), seen at or after it (a wrong value where it is seen,
    `seen_at`, not where it was last written); anywhere if it is pinned to
    none."""
    if failure.statement is None:
        return bool(roots)
    case = failure.case
    body = case.statements
    at = failure.statement if failure.seen_at is None else failure.seen_at
    # A control statement stands for the statements nested in it (``at``
    # may also be the end of the program).
    last = at + ir.size(body[at]) - 1 if at < len(body) else at
    refs = {v.ref for v in ir.walk(body[failure.statement], ir.View)} | {
        r for s in ir.flat((body[failure.statement],)) for r in s.slices()}
    return any(last >= r and refs & {v.ref for v in ir.views(body[r])} for r in roots)


def _on_paths(k: KnownFinding, failure) -> bool:
    return not k.paths or bool(set(k.paths) & set(str(failure.path).split("/")))


def match(failure, report_failures=()) -> KnownFinding | None:
    """The known finding ``failure`` is an instance of, if any."""
    for k in KNOWN:
        if not _on_paths(k, failure):
            continue
        if _hits(k.symptoms, failure) and trigger_statements(k, failure):
            return k
        if _hits(k.consequences, failure):
            roots = [n for f in report_failures if f is not failure and _hits(k.symptoms, f)
                     for n in trigger_statements(k, f)]
            if _downstream(k, failure, roots):
                return k
    return None


def _crashes(failures):
    """The known findings among ``failures`` that a path raised on."""
    return [f for f in failures if f.known is not None and f.oracle == "valid-runs"]


def stopped(failures) -> tuple[str, ...]:
    """The paths a known crash among ``failures`` stopped: those `unmasked`
    runs again (the others ran the whole program)."""
    return tuple(dict.fromkeys(f.path for f in _crashes(failures)))


def _triggering(k: KnownFinding, case: ir.Case, failure) -> list[int]:
    """The statements of ``case`` with ``k``'s trigger: every one (a second
    would raise the same crash again), or where its trigger is the whole
    case's, those ``failure`` is about."""
    if k.case_level:
        return trigger_statements(k, failure)
    return with_trigger(k, case)


def unmasked(case: ir.Case, failures) -> ir.Case | None:
    """``case`` (valid) without the triggers of the known findings among
    ``failures`` that a path raised on: a known crash stops every oracle on
    its path, so while it is hit, a bug behind it stays hidden. Each
    statement with a trigger becomes its first simpler variant without
    those triggers (a function called on views closes over them, and its
    block stays), or else goes. None where no known finding raised, or
    nothing well-formed is left."""
    entries: dict[int, set] = {}
    for f in _crashes(failures):
        for n in _triggering(BY_ID[f.known], case, f):
            entries.setdefault(n, set()).add(BY_ID[f.known])
    if not case.valid or not entries:
        return None
    drop = []
    for n in sorted(entries, reverse=True):   # (later first: earlier ones keep their numbers)
        if (simpler := _without_trigger(case, n, entries[n])) is None:
            drop.append(n)
        else:
            case = simpler
    return ir.without_statements(case, drop) if drop else case


def _without_trigger(case: ir.Case, n: int, known) -> ir.Case | None:
    """``case`` with statement ``n`` replaced by its first simpler variant
    of the same size that has none of the triggers of ``known``."""
    stmt = case.statements[n]
    for variant in stmt.simpler(case):
        if ir.size(variant) != ir.size(stmt):
            continue
        try:
            candidate = dataclasses.replace(case, body=ir.replaced_statement(case.body, n, variant))
        except (ir.IRError, ValueError, TypeError, IndexError):
            continue
        if not any(has_trigger(k, candidate, n) for k in known):
            return candidate
    return None

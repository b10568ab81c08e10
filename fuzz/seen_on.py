"""Which JAX releases each suppression is seen on: measured, not written by hand.

A suppression (a known finding, `fuzz.known_findings`; an unsupported-table
entry, `fuzz.unsupported`) tolerates a failure only on the releases where
its own example still shows it. Those are in ``seen_on.json`` beside this
module: for each entry and release, what its example did there,

- ``bad``: it fails as the entry says (the known finding is the first entry
  its failure matches; the path refuses it as the entry does, and nothing
  else fails);
- ``good``: it runs, an oracle that shows the bug checks it, and nothing
  fails (fixed there, or never broken);
- ``other: ...``: it fails another way (the entry's patterns do not fit
  that release's words);
- ``n/a: ...``: that release cannot run it (an API or path it lacks), or
  lacks what every oracle that would show the bug needs.

Only ``bad`` releases suppress: elsewhere the same failure is a finding,
and tests/test_known_findings.py replays each entry as a strict expected
failure only where it is bad. ``discharge-fuzz bisect --suppressions``
measures the table on every release (`judge`, run inside each release's
environment) and rewrites it. A JAX newer than every measured release is
taken as the newest one measured; an entry not yet measured is assumed seen
on the running release (tests/test_releases.py fails until it is measured).

Example::

    seen_on.applies("known", "semaphore-counts-wrap-at-16-bits")   # on this JAX
    KNOWN = seen_on.only_seen("known", ALL_KNOWN)
"""
from __future__ import annotations

import json
import os

import jax

from fuzz import atomic, compat, releases

FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seen_on.json")
KINDS = ("known", "unsupported")


def load(path: str = FILE) -> dict[str, dict[str, dict[str, str]]]:
    """``{kind: {entry id: {release: verdict}}}``; an empty table if none."""
    if not os.path.exists(path):
        return {kind: {} for kind in KINDS}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {kind: data.get(kind, {}) for kind in KINDS}


def save(table: dict, path: str = FILE) -> None:
    text = json.dumps({kind: {i: dict(sorted(v.items(), key=lambda kv: releases.parse(kv[0])))
                              for i, v in sorted(table[kind].items())} for kind in KINDS},
                      indent=1)
    atomic.write_text(path, text + "\n")


TABLE = load()


def verdict(kind: str, entry_id: str, version: tuple[int, ...] | None = None) -> str | None:
    """What ``entry_id``'s example did on the measured release nearest at
    or below ``version`` (default: the running JAX): None if not measured."""
    version = compat.jax_version() if version is None else version
    seen = TABLE[kind].get(entry_id, {})
    below = [r for r in seen if releases.parse(r) <= version]
    if not below:
        return None
    return seen[max(below, key=releases.parse)]


def applies(kind: str, entry_id: str) -> bool:
    """Whether the entry suppresses on the running JAX."""
    v = verdict(kind, entry_id)
    return v is None or v == "bad"


def only_seen(kind: str, entries: tuple) -> tuple:
    """The ``entries`` (each with an ``id``) that suppress on the running JAX."""
    return tuple(e for e in entries if applies(kind, e.id))


# --- measuring (runs inside a release's environment: fuzz.bisect's step) ------

def judge(ids=None, suppressing=None) -> dict[str, dict[str, str]]:
    """``{kind: {id: verdict}}`` for the entries named (default: all) on
    this interpreter's JAX, each judged as its test judges it: with the
    entries ``suppressing`` (ids; default: all) and itself suppressing.

    Which entries suppress decides what the others' examples show (a failure
    is pinned to the first entry it matches; a known one lets the tiers go
    on), so `fuzz.bisect.measure_suppressions` starts from all and repeats
    with the bad ones until the verdicts stop changing."""
    from fuzz import known_findings, unsupported
    found = {kind: {} for kind in KINDS}
    running = known_findings.KNOWN, unsupported.CURRENT
    try:
        for kind, entries, judged in (("known", known_findings.ALL_KNOWN, _judge_known),
                                      ("unsupported", unsupported.TABLE, _judge_refused)):
            for entry in entries:
                if ids is not None and entry.id not in ids:
                    continue
                known_findings.KNOWN, unsupported.CURRENT = (tuple(
                    e for e in table if suppressing is None or e.id in suppressing or e is entry)
                    for table in (known_findings.ALL_KNOWN, unsupported.TABLE))
                found[kind][entry.id] = judged(entry)
    finally:
        known_findings.KNOWN, unsupported.CURRENT = running
    return found


def _first(report) -> str:
    f = report.failures[0]
    return f"{f.oracle} on {f.path}: {releases.steady(str(f.message).splitlines()[0])[:160]}"


def _checked(case):
    """(the report of ``case``, None), or (None, n/a and why): no path of it
    could run here, or the fuzzer itself broke on this release."""
    from fuzz import oracles
    try:
        report = oracles.check(case)
    except Exception as e:   # noqa: BLE001 - said, not raised: one entry's verdict
        first = (str(e).splitlines() or [""])[0]
        return None, f"n/a: the fuzzer raised {type(e).__name__}: {releases.steady(first)[:160]}"
    if case.paths and set(case.paths) <= set(report.skipped):
        return None, "n/a: " + next(iter(report.skipped.values()))
    return report, None


def _judge_known(k) -> str:
    from fuzz import known_findings
    report, why = _checked(k.example)
    if why:
        return why
    firsts = [known_findings.match(f, report.failures) for f in report.failures]
    if k in firsts:
        return "bad"
    if not report.failures:
        # good only where an oracle that shows the bug ran on the example
        lacking = [report.not_applied.get(oracle, "") for oracle, _ in k.symptoms]
        if all(why.startswith(f"JAX {jax.__version__} ") for why in lacking):
            return f"n/a: {lacking[0]}"
        return "good"
    other = next((m.id for m in firsts if m is not None), None)
    return "other: " + (f"matches {other} first" if other else _first(report))


def _judge_refused(entry) -> str:
    report, why = _checked(entry.example)
    if why:
        return why
    refused = [u[1] for u in report.unsupported if u[0] == entry.path]
    if not report.failures and refused == [entry]:
        return "bad"
    if not report.failures and not refused:
        return "good"
    if report.failures:
        known = report.failures[0].known
        return f"other: matches {known} first" if known else "other: " + _first(report)
    return "other: refused as " + ", ".join(e.id for e in refused)

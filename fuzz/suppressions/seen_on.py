"""Which JAX releases each suppression is seen on: measured, not written by hand.

A suppression (a known finding, `fuzz.suppressions.known_findings`; an unsupported-table
entry, `fuzz.suppressions.unsupported`) tolerates a failure only on the releases where
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
measures the table on every release (`fuzz.triage.bisect.judge_suppressions`,
run inside each release's environment) and rewrites it; this module only
reads it. A JAX newer than every measured release is
taken as the newest one measured; an entry not yet measured is assumed seen
on the running release (tests/test_releases.py fails until it is measured).

Example::

    seen_on.applies("known", "same-width-bitcast-below-2d")   # on this JAX
    KNOWN = seen_on.only_seen("known", ALL_KNOWN)
"""
from __future__ import annotations

import json
import os

from fuzz import compat

FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seen_on.json")
KINDS = ("known", "unsupported")


def load(path: str = FILE) -> dict[str, dict[str, dict[str, str]]]:
    """``{kind: {entry id: {release: verdict}}}``; an empty table if none."""
    if not os.path.exists(path):
        return {kind: {} for kind in KINDS}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {kind: data.get(kind, {}) for kind in KINDS}


TABLE = load()


def verdict(kind: str, entry_id: str, version: tuple[int, ...] | None = None) -> str | None:
    """What ``entry_id``'s example did on the measured release nearest at
    or below ``version`` (default: the running JAX): None if not measured."""
    version = compat.jax_version() if version is None else version
    seen = TABLE[kind].get(entry_id, {})
    below = [r for r in seen if compat.parse_release(r) <= version]
    if not below:
        return None
    return seen[max(below, key=compat.parse_release)]


def applies(kind: str, entry_id: str) -> bool:
    """Whether the entry suppresses on the running JAX."""
    v = verdict(kind, entry_id)
    return v is None or v == "bad"


def only_seen(kind: str, entries: tuple) -> tuple:
    """The ``entries`` (each with an ``id``) that suppress on the running JAX."""
    return tuple(e for e in entries if applies(kind, e.id))

"""The corpus: cases kept as JSON files, replayed by the tests.

- ``corpus/seeds/*.json``: hand-picked valid cases; they must pass.
- ``corpus/regressions/<finding id>.json``: one minimized case per finding,
  with its signature; it must keep failing with that signature until JAX
  fixes the bug.

A file is an envelope ``{"corpus": 1, "kind": "seed" | "regression", "note",
"case": <serialize.to_data>, ...}``; a bare case (``serialize.dumps``) loads
as kind "case". Files are data: every field is checked, nothing is executed,
and every problem is one line naming the file.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from fuzz import atomic, ir, serialize

FORMAT_VERSION = 1
KINDS = ("seed", "regression")
_FIELDS = {"seed": {"corpus", "kind", "note", "case"},
           "regression": {"corpus", "kind", "note", "case", "id", "signature", "oracle",
                          "primitive", "known", "first_jax"}}
_REQUIRED = {"seed": {"case"}, "regression": {"case", "id", "signature"}}
# Strings that end up in generated source or file names must look like what
# they are (the renderer quotes them anyway; this rejects the file early).
_EXCEPTION_NAMES = re.compile(r"[A-Za-z_]\w*(\|[A-Za-z_]\w*)*")
_PRIMITIVE = re.compile(r"\?|[a-z_]+")
_ID = re.compile(r"[a-z0-9][a-z0-9_.-]*")


class CorpusError(ValueError):
    """A corpus file that cannot be used; the message names the file."""


@dataclass(frozen=True)
class Entry:
    path: str
    kind: str                 # seed | regression | case
    case: ir.Case
    note: str = ""
    meta: dict = field(default_factory=dict)   # id, signature, oracle, ... (regressions)

    @property
    def signature(self) -> str | None:
        return self.meta.get("signature")


def load(path) -> Entry:
    """Read and check one corpus file; CorpusError("<path>: <what>") if it is bad."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise CorpusError(f"{path}: cannot read: {e}") from None
    try:
        return _entry(path, text)
    except (serialize.CaseFormatError, CorpusError) as e:
        raise CorpusError(f"{path}: {' '.join(str(e).split())}") from None


def _entry(path, text) -> Entry:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CorpusError(f"not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise CorpusError(f"expected a JSON object, got {type(data).__name__}")
    if "corpus" not in data:
        return Entry(path, "case", _case(data))
    if data["corpus"] != FORMAT_VERSION:
        raise CorpusError(f"corpus: format {data['corpus']!r} is not the supported {FORMAT_VERSION}")
    kind = data.get("kind")
    if kind not in KINDS:
        raise CorpusError(f"kind: {kind!r} is not one of {KINDS}")
    if unknown := sorted(set(data) - _FIELDS[kind]):
        raise CorpusError(f"{unknown[0]}: unknown field for a {kind}")
    if missing := sorted(_REQUIRED[kind] - set(data)):
        raise CorpusError(f"{missing[0]}: missing")
    meta = {k: v for k, v in data.items() if k not in ("corpus", "kind", "note", "case")}
    for key, value in {"note": data.get("note", ""), **meta}.items():
        if not (value is None or isinstance(value, str)):
            raise CorpusError(f"{key}: expected a string, got {value!r:.60}")
    if kind == "regression":
        stem = os.path.splitext(os.path.basename(path))[0]
        if not _ID.fullmatch(meta["id"]) or meta["id"] != stem:
            raise CorpusError(f"id: {meta['id']!r:.60} must be the file name ({stem!r})")
    return Entry(path, kind, _case(data["case"]), data.get("note") or "", meta)


def _case(data) -> ir.Case:
    case = serialize.from_data(data)
    if case.expect is not None:
        e = case.expect
        if not _EXCEPTION_NAMES.fullmatch(e.type):
            raise CorpusError(f"case.expect.type: {e.type!r:.60} is not exception names")
        if not _PRIMITIVE.fullmatch(e.primitive):
            raise CorpusError(f"case.expect.primitive: {e.primitive!r:.60} is not a primitive name")
        try:
            re.compile(e.match)
        except re.error as err:
            raise CorpusError(f"case.expect.match: not a regular expression ({err})") from None
    return case


def files(corpus_dir, kind: str) -> list[str]:
    """The corpus files of ``kind`` ("seed" or "regression"), sorted."""
    directory = os.path.join(os.fspath(corpus_dir), kind + "s")
    if not os.path.isdir(directory):
        return []
    return sorted(os.path.join(directory, n) for n in os.listdir(directory) if n.endswith(".json"))


def _dumps(envelope: dict) -> str:
    return json.dumps({"corpus": FORMAT_VERSION, **envelope}, indent=1, sort_keys=True) + "\n"


def write_seed(corpus_dir, name: str, case: ir.Case, note: str) -> str:
    if not _ID.fullmatch(name):
        raise ValueError(f"seed name {name!r} must match {_ID.pattern}")
    path = os.path.join(os.fspath(corpus_dir), "seeds", name + ".json")
    atomic.write_text(path, _dumps({"kind": "seed", "note": note,
                                    "case": serialize.to_data(case)}))
    return path


def write_regression(corpus_dir, finding) -> str:
    """``corpus/regressions/<id>.json`` for a `findings.Finding`."""
    path = os.path.join(os.fspath(corpus_dir), "regressions", finding.id + ".json")
    atomic.write_text(path, _dumps({
        "kind": "regression", "id": finding.id, "signature": finding.signature,
        "oracle": finding.oracle, "primitive": finding.primitive, "known": finding.known,
        "first_jax": finding.versions.get("jax"), "note": finding.message,
        "case": serialize.to_data(finding.case)}))
    return path

"""Lossless JSON for cases, with a schema version.

Cases are data: decoding builds IR nodes from a closed set of classes, checks
every field against its declared type, and never evaluates anything. Any
problem raises `CaseFormatError` naming the offending field, e.g.
``body[2].view.transforms[0].shape: expected int, got 'x'``.
"""
from __future__ import annotations

import dataclasses
import json
import types
import typing

import fuzz.ops  # noqa: F401 - registers every statement kind a case may hold
from fuzz import ir


class CaseFormatError(ValueError):
    pass


def to_data(case: ir.Case) -> dict:
    return {"schema": ir.SCHEMA_VERSION, **_encode(case)}


def _encode(x):
    if dataclasses.is_dataclass(x):
        d = {"op": x.tag} if hasattr(type(x), "tag") else {}
        d.update({f.name: _encode(getattr(x, f.name)) for f in dataclasses.fields(x)})
        return d
    if isinstance(x, tuple):
        return [_encode(v) for v in x]
    return x


def dumps(case: ir.Case) -> str:
    return json.dumps(to_data(case), indent=1, sort_keys=True)


def loads(text: str) -> ir.Case:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseFormatError(f"not valid JSON: {e}") from None
    return from_data(data)


def from_data(data) -> ir.Case:
    if not isinstance(data, dict):
        raise CaseFormatError(f"a case is a JSON object, got {type(data).__name__}")
    schema = data.get("schema")
    while schema in _MIGRATIONS:
        data = _MIGRATIONS[schema](data)
        schema = data["schema"]
    if schema != ir.SCHEMA_VERSION:
        raise CaseFormatError(
            f"schema: version {schema!r} is not the supported {ir.SCHEMA_VERSION}")
    body = {k: v for k, v in data.items() if k != "schema"}
    try:
        return _decode_record(ir.Case, body, "case")
    except ir.IRError as e:
        raise CaseFormatError(f"case: {e}") from None


def _from_1(data: dict) -> dict:
    """Schema 1 declared only semaphores, as ``semaphores``; they are refs now."""
    data = dict(data, schema=2)
    if "semaphores" in data:
        data["refs"] = data.pop("semaphores")
    return data


def _from_2(data: dict) -> dict:
    """Schema 3 added ref fields with defaults (memory space, aliasing)."""
    return dict(data, schema=3)


def _from_3(data: dict) -> dict:
    """Schema 4 added the case's grid (none before)."""
    return dict(data, schema=4)


def _from_4(data: dict) -> dict:
    """Schema 5 added steps' slices, a loop's xs and pipelines (none before)."""
    return dict(data, schema=5)


def _from_5(data: dict) -> dict:
    """Schema 6 added the case's mesh and device indices (none before)."""
    return dict(data, schema=6)


# Old schema version -> the function that lifts a case one version up.
_MIGRATIONS = {1: _from_1, 2: _from_2, 3: _from_3, 4: _from_4, 5: _from_5}


def _decode_record(cls, d, where):
    if not isinstance(d, dict):
        raise CaseFormatError(f"{where}: expected an object, got {d!r:.60}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names - {"op"})
    if unknown:
        raise CaseFormatError(f"{where}.{unknown[0]}: unknown field for {cls.__name__}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in d:
            kwargs[f.name] = _decode(d[f.name], hints[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING:
            raise CaseFormatError(f"{where}.{f.name}: missing")
    try:
        return cls(**kwargs)
    except ir.IRError:
        raise
    except (TypeError, ValueError) as e:
        raise CaseFormatError(f"{where}: {e}") from None


def _decode(value, hint, where):
    """Decode ``value`` as type ``hint`` (an IR annotation)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        nodes = [a for a in args if a is not type(None)]
        if isinstance(value, dict) and all(hasattr(a, "tag") for a in nodes):
            return _decode_tagged(value, nodes, where)
        errors = []
        for a in nodes:
            try:
                return _decode(value, a, where)
            except CaseFormatError as e:
                errors.append(str(e))
        raise CaseFormatError(errors[0] if len(errors) == 1 else
                              f"{where}: expected {hint}, got {value!r:.60}")
    if origin is tuple:
        if not isinstance(value, list):
            raise CaseFormatError(f"{where}: expected a list, got {value!r:.60}")
        item = args[0]
        return tuple(_decode(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if hint is ir.Statement:
        return _decode_tagged(value, ir.statement_types(), where)
    if dataclasses.is_dataclass(hint):
        if hasattr(hint, "tag"):
            return _decode_tagged(value, [hint], where)
        return _decode_record(hint, value, where)
    if hint is type(None):
        if value is not None:
            raise CaseFormatError(f"{where}: expected null, got {value!r:.60}")
        return None
    if hint is int and (type(value) is not int):
        raise CaseFormatError(f"{where}: expected int, got {value!r:.60}")
    if hint is bool and type(value) is not bool:
        raise CaseFormatError(f"{where}: expected true/false, got {value!r:.60}")
    if hint is str and type(value) is not str:
        raise CaseFormatError(f"{where}: expected a string, got {value!r:.60}")
    return value


def _decode_tagged(value, classes, where):
    if not isinstance(value, dict) or "op" not in value:
        raise CaseFormatError(f"{where}: expected an object with 'op', got {value!r:.60}")
    for cls in classes:
        if cls.tag == value["op"]:
            return _decode_record(cls, value, where)
    raise CaseFormatError(f"{where}.op: {value['op']!r} is not one of "
                          f"{[c.tag for c in classes]}")

"""Which rule a wrong value comes from: the root cause of a wrong value.

A wrong value is seen where a program *observes* it (a read, a final count,
a rerun under vmap or AD), which is often not where it was *computed*: one
bug in a signal's discharge rule shows as a wrong read after a wait, a
wrong final count, a wrong value under vmap. Each is another signature; a
maintainer wants one report. So the case is cut short, one top-level
statement at a time, and rerun on the failure's paths with the failure's
oracle and the model: the first statement after which a wrong value shows
is the one whose rule computed it. A control statement (loop, cond) is
looked into: if one of its bodies alone still shows a wrong value, the
culprit is in there; else the control statement's own rule is.

The root cause is then (`key`): whose rules were wrong (the path's, or the
transformation's the oracle reruns under, where the model, asked on every
path of the cut, sees nothing wrong), the culprit's primitive, and how its
value is wrong (a count's direction, "too high" or "too low", where the
model judges the cut; else the oracle's own shape of failure). Two bugs in
one rule that are wrong the same way are one key: how the value is wrong is
what tells them apart.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from jax._src.interpreters import ad, batching

from fuzz import compat, ir, oracles, paths

_MODEL = "model-vs-path"


@dataclass(frozen=True)
class Culprit:
    primitive: str
    rules: str       # whose rules computed the wrong value (`rules_of`)
    relation: str    # how the value is wrong

    @property
    def key(self) -> str:
        return f"rule:{self.rules}:{self.primitive}:{self.relation}"


def wrong_value(failure) -> bool:
    """Whether ``failure`` is a wrong value (not an exception, a crash, or an
    invariant only a probe inside JAX sees), on a case to cut."""
    return (getattr(failure, "case", None) is not None and not failure.error_is_the_symptom
            and not getattr(failure, "inside_jax", False) and not getattr(failure, "fatal", False)
            and failure.symptom_of() == "wrong value")


def culprit(failure) -> Culprit | None:
    """The statement whose rule computed ``failure``'s wrong value (None: not
    a wrong value, or no cut of the case shows one)."""
    if not wrong_value(failure):
        return None
    on = tuple(failure.path.split("/"))
    names = tuple(dict.fromkeys((failure.oracle, _MODEL)))
    return _in(failure.case, on, names, failure)


def _wrongs(case: ir.Case, on, names) -> list:
    report = oracles.check(case, on_paths=on, oracles=names)
    return [f for f in report.failures if f.known is None and wrong_value(f)]


def _in(case: ir.Case, on, names, failure) -> Culprit | None:
    found = _first_cut(case, on, names)
    if found is None:
        return None
    cut, n, wrongs = found
    for b in range(len(cut.statements[n].blocks())):
        body = ir.unwrapped(cut.body, n, b)
        alone = _case(cut, body) if body is not None else None
        if alone is not None and _wrongs(alone, on, names):
            return _in(alone, on, names, failure)   # the culprit is in that body
    return _named(cut, n, wrongs, failure)


def _first_cut(case: ir.Case, on, names):
    """(the shortest cut of ``case`` that shows a wrong value, the number of
    its culprit, the wrong values), or None. Where the cut ends in a read
    (it changes nothing), the read may only show what an earlier statement
    got wrong, on a path that shows reads but not counts: the culprit is
    then the statement without which the read shows no wrong value."""
    tops = [n for n, _ in ir.top_level(case.body)]
    for j in range(1, len(tops) + 1):
        cut = _case(case, case.body[:j])
        if cut is None or not (found := _wrongs(cut, on, names)):
            continue
        last = case.body[j - 1]
        for i in range(j if last.writes_out else 0):
            seen = _case(case, (*case.body[:i], last))
            if seen is not None and (also := _wrongs(seen, on, names)):
                if i:
                    return seen, tops[i - 1], also
                break   # the read alone shows it: the read's rule is wrong
        return cut, tops[j - 1], found
    return None


def _model_anywhere(case: ir.Case) -> list:
    """The model's wrong values on any path of ``case``: a path that shows
    counts (run_state) sees a wrong count that the failure's own (reads
    only) and its oracle's rerun (vmap, AD, partial discharge) do not, and
    the wrong rule is then the program's own, not the transformation's."""
    try:
        return _wrongs(dataclasses.replace(case, paths=ir.PATHS), None, (_MODEL,))
    except ir.IRError:
        return []


def _case(case: ir.Case, body) -> ir.Case | None:
    try:
        return dataclasses.replace(case, body=tuple(body))
    except ir.IRError:   # a cut the IR refuses (a copy's wait without its start, ...)
        return None


def _named(case: ir.Case, n: int, found: list, failure) -> Culprit:
    """The culprit, statement ``n`` of ``case``, from the wrong values seen:
    the model's where it judges (it names which path was wrong, and how),
    else the failure's own oracle's."""
    primitive = case.statements[n].primitive
    model = [f for f in found if f.oracle == _MODEL] or _model_anywhere(case)
    mine = [f for f in model if f.statement == n] or model
    if mine:
        rules = sorted({rules_of(p) for f in mine for p in f.path.split("/")})
    else:
        mine = [f for f in found if f.oracle == failure.oracle] or found
        own = type(failure).RULES   # a transformation's rules (vmap's, AD's, ...)
        rules = [own] if own else sorted({rules_of(p) for f in mine for p in f.path.split("/")})
        if own == "batching" and all(paths.fact(p, "CONTEXT") == "pallas"
                                     for p in failure.path.split("/")):
            # vmap batches a Pallas kernel as one primitive, by pallas_call's rule
            primitive = "pallas_call"
    relation = ",".join(sorted({_how(f) for f in mine}))
    return Culprit(primitive, "+".join(rules), relation)


# How a count is wrong, by direction: an update lost is too low whatever the
# amount, so one off-by-one rule is one key whether its amount was 1 or 3.
_DIRECTION = {"update lost": "too low", "update applied twice": "too high"}


def _how(failure) -> str:
    """How ``failure``'s value is wrong (its shape's last part): a count's
    direction, without a ref's number (the program's, not the bug's)."""
    how = re.sub(r"\br\d+ ", "", (failure.shape or "differs").rsplit("|", 1)[-1])
    return _DIRECTION.get(how, how)


def rules_of(path: str) -> str:
    """Whose rules evaluate a path's statements: its ``RULES`` fact, else
    JAX's discharge rules (every path but the TPU interpreter's)."""
    return paths.fact(path, "RULES") or "discharge"


def rule_code(rules: str, primitive: str) -> str | None:
    """The JAX function (``jax/_src/...py:name``) of the rule a key blames,
    where the running JAX registers one: a discharge rule, a batching rule
    or a JVP rule of the primitive named ``primitive``."""
    tables = {"discharge": compat.discharge_rules,
              # (primitive_batchers is a write-only proxy on 0.12; the rules are
              # the fancy table's there, and the older releases' dict's)
              "batching": lambda: {p: r for t in (batching.primitive_batchers, getattr(
                  batching, "fancy_primitive_batchers", {})) if isinstance(t, dict)
                  for p, r in t.items()},
              "differentiation": lambda: ad.primitive_jvps}
    table = tables.get(rules, dict)()
    rule = next((r for p, r in table.items() if str(p) == primitive), None)
    while rule is not None and hasattr(rule, "__wrapped__"):
        rule = rule.__wrapped__
    code = getattr(rule, "__code__", None)
    if code is None or "jax/_src/" not in code.co_filename:
        return None
    return f"jax/_src/{code.co_filename.split('jax/_src/', 1)[1]}:{code.co_name}"


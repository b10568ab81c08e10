"""Where the installed JAX defines a function: a report names the JAX code
it blames as ``jax/_src/<file>.py:<function>``, which a maintainer opens
at once. Read from the installed sources (ground truth for this release),
once per process."""
from __future__ import annotations

import collections
import functools
import os
import re

import jax

# A name a description gives as JAX code: a private function (_rule, _cast),
# a discharge or JVP rule, or Class.method; or any name followed by its file
# in parentheses ("resolve_physical_types (jax/_src/pallas/hlo_interpreter.py)").
# Never one after a module prefix (jax.jit, pl.run_scoped): public API, not a culprit.
# (the name with its file first: it names one of several functions of that name)
_NAMED = re.compile(r"(?<![\w.])(\w+) \(((?:jax/_src/)?[\w/]+\.py)\)"
                    r"|(?<![\w.])([A-Z]\w*\.\w+|_\w+|\w+_rule|\w+_discharge\w*)(?![\w(])")
_DEF = re.compile(r"(\s*)def (\w+)\(")
_CLASS = re.compile(r"class (\w+)")


@functools.cache
def _definitions() -> tuple[dict, dict]:
    """({function: {file}}, {(class, method): {file}}) over jax/_src, each
    file as ``jax/_src/...py``."""
    top = os.path.dirname(os.path.dirname(jax.__file__))
    functions, methods = collections.defaultdict(set), collections.defaultdict(set)
    for folder, _, names in os.walk(os.path.join(top, "jax", "_src")):
        for name in (n for n in names if n.endswith(".py")):
            path = os.path.join(folder, name)
            rel, cls = os.path.relpath(path, top).replace(os.sep, "/"), None
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in f:
                    if m := _CLASS.match(line):
                        cls = m[1]
                    elif m := _DEF.match(line):
                        functions[m[2]].add(rel)
                        if m[1] and cls:
                            methods[(cls, m[2])].add(rel)
    return functions, methods


def named_in(text: str) -> list[str]:
    """The JAX functions ``text`` names, as ``file:function``, each found in
    exactly one file of the installed JAX (an ambiguous or unknown name is
    left out: a wrong file is worse than none)."""
    functions, methods = _definitions()
    found = []
    for m in _NAMED.finditer(text):
        if m[1]:
            name, files = m[1], {f for f in functions.get(m[1], ()) if f.endswith(m[2])}
        elif "." in m[3]:
            name = m[3]
            files = methods.get(tuple(name.split(".", 1)), set())
        else:
            name, files = m[3], functions.get(m[3], set())
        if len(files) == 1:
            found.append(f"{next(iter(files))}:{name}")
    return list(dict.fromkeys(found))

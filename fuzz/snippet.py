"""The snippet a report opens with: about 15 lines someone can paste into a
JAX issue as they are. Imports, the kernel, the call, its result printed,
and one comment saying what happens and what should.

It is the very program the reproducer runs (`fuzz.paths.program`), pressed:
no comments, docstrings or blank lines, unused imports dropped, a
forwarding wrapper and ``run()`` inlined. The reproducer itself, which
checks the result and exits 1 while the bug is there, stays the report's
attached ``.py``.

Example::

    text = snippet(case, "pallas_call", said="raises TypeError: ...; expected: no error")
"""
from __future__ import annotations

import re

from fuzz import ir, paths

_COMMENT = re.compile(r"\s+#\s.*$")
_DOCSTRING = re.compile(r'^\s*"""[^"]*"""\s*$')
# A kernel wrapper that only forwards its parameters (pallas_call's, when no
# operand is copied in first).
_FORWARD = re.compile(r"def (\w+)\(([^)]*)\):\n    kernel\(\2, \)\n")
# ``function()`` (the program and its arguments) and ``run()``, at the top level.
_FUNCTION = re.compile(r"def function\(\):\n((?:    .*\n|\n)*?)    return (.*)\n")
# (the paths' own run(), as `fuzz.paths.program` writes it, and the call it becomes)
_RUN = {paths.RUN.strip(): "{f}{args}", paths.RUN_JIT.strip(): "jax.jit({f}){args}"}
_IMPORTS = {"import numpy as np": r"\bnp\.",
            "from jax.experimental.pallas import tpu as pltpu": r"\bpltpu\.",
            "from jax.experimental.pallas import triton as plgpu": r"\bplgpu\.",
            "import json": r"\bjson\."}
WIDTH = 100


def snippet(case: ir.Case, path: str, *, jit: bool = False, said: str = "") -> str:
    """``case`` on ``path``, pressed into a paste-able snippet ending in the
    comment ``said`` (what happens; what should)."""
    text = paths.program(case, path, jit=jit)[0]
    for run, call in _RUN.items():
        if run in text and (m := _FUNCTION.search(text)):
            f, args = _split(m.group(2))   # ``return f, (args...)``: f(args...) inline
            body = "".join(line[4:] + "\n" for line in m.group(1).splitlines())
            text = text.replace(m.group(0), body).replace(
                run, f"print(*[x.tolist() for x in {call.format(f=f, args=args)}])")
    if "print(" not in text:
        text += "\nprint(run())\n"
    if m := _FORWARD.search(text):
        text = text.replace(m.group(0), "").replace(f"{m.group(1)},", "kernel,")
    x64 = "X64 = True" in text
    lines = []
    for line in text.splitlines():
        if line.lstrip().startswith("#") or _DOCSTRING.match(line) or not line.strip() \
                or line.startswith("X64 = "):
            continue
        line = _COMMENT.sub("", line)
        if lines and lines[-1].endswith("(") and len(lines[-1]) + len(line.strip()) <= WIDTH:
            lines[-1] += line.strip()
        else:
            lines.append(line)
    body = "\n".join(lines)
    kept = [line for line in lines if line not in _IMPORTS or re.search(_IMPORTS[line], body)]
    if x64:   # what the reproducer's enable_x64(X64) does, for the whole snippet
        kept.insert(next(i for i, line in enumerate(kept) if not line.startswith(("import", "from"))),
                    'jax.config.update("jax_enable_x64", True)')
    if said:
        kept.append("# " + " ".join(said.split()))
    return "\n".join(kept) + "\n"


def _split(pair: str) -> tuple[str, str]:
    """``"f(a, b), (x, y)"`` -> ``("f(a, b)", "(x, y)")``: at the first comma
    outside brackets."""
    depth = 0
    for i, c in enumerate(pair):
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "," and depth == 0:
            return pair[:i].strip(), pair[i + 1:].strip()
    raise ValueError(f"not a pair: {pair!r}")


def said(reproducer: dict, message: str = "") -> str:
    """What happens and what should, from a verified reproducer's output; a
    crash or a hang prints nothing, so its ``message`` (the finding's) says."""
    if reproducer.get("fatal"):
        return f"Bug: {message[:200]}; expected: it runs to its end" if message else ""
    out = {k: v for k, _, v in (line.partition(":") for line in
                                (reproducer.get("output") or "").splitlines())}
    actual, expected = out.get("actual", "").strip(), out.get("expected", "").strip()
    if not actual:
        return ""
    actual = actual.removeprefix("results with avals ").split(" and values ")
    actual = (f"prints {actual[1]}" if len(actual) > 1 else
              "raises " + actual[0] if ":" in actual[0] else f"gives {actual[0]}")
    return f"Bug: {actual[:160]}; expected: {expected[:160]}"

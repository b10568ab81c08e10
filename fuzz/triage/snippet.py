"""The snippet a report opens with: about 15 lines someone can paste into a
JAX issue as they are. Imports, the kernel, the call, its result printed,
and one comment saying what happens and what should.

It is the very program the reproducer runs (`fuzz.paths.program`, and an
oracle's comparison: `fuzz.oracles.base.Comparison`), pressed: no comments,
docstrings or blank lines; unused imports dropped, the plain ones on one
line; functions and constants nothing uses dropped, and the parameters a
function called once never reads (the kernel's ``dyn`` and ``out``, most
often); the kernel merged into the wrapper that calls it; ``run()``,
constants used once and functions that only return used once inlined; a
nested function of one statement on one line. The reproducer itself, which
checks the result and exits 1 while the bug is there, stays the report's
attached ``.py``.

Example::

    text = snippet(case, "pallas_call", said="raises TypeError: ...; expected: no error")
"""
from __future__ import annotations

import ast
import re

from fuzz import compat, ir, paths
from fuzz.triage import releases, reproducer

_COMMENT = re.compile(r"\s+#\s.*$")
_DOCSTRING = re.compile(r'^\s*"""[^"]*"""\s*$')
# The kernel, and a wrapper (pallas_call's, an oracle's function) that calls it.
_KERNEL = re.compile(r"def kernel\(([^)]*)\):\n((?:(?:    .*)?\n)*?)(?=\S|\n\S)")
_WRAPPER = re.compile(r"def (\w+)\(([^)]*)\):\n((?:    .*\n)*?)    kernel\((.*)\)\n")
# A module constant, inlined where it is used once.
_CONSTANT = re.compile(r"^([A-Z][A-Z0-9_]*) = ([\w.]*[(\[].*[)\]])$")
# ``function()`` (the program and its arguments) and ``run()``, at the top level.
_FUNCTION = re.compile(r"def function\(\):\n((?:    .*\n|\n)*?)    return (.*)\n")
# (the paths' own run(), as `fuzz.paths.program` writes it, and the call it becomes)
_RUN = {paths.RUN.strip(): "{f}{args}", paths.RUN_JIT.strip(): "jax.jit({f}){args}"}
_IMPORTS = {"import numpy as np": r"\bnp\.",
            "from jax.experimental import pallas as pl": r"\bpl\.",
            "from jax.experimental.pallas import tpu as pltpu": r"\bpltpu\.",
            "from jax.experimental.pallas import triton as plgpu": r"\bplgpu\.",
            "import json": r"\bjson\."}
WIDTH = 100
# The reproducer's mesh header: its device count, asked for where the process has fewer.
_DEVICES = re.compile(r'if jax\.config\.jax_num_cpu_devices < \d+: (jax\.config\.update\("jax_num_cpu_devices", \d+\))$')


def snippet(case: ir.Case, path: str, *, jit: bool = False, said: str = "",
            comparison: dict | None = None, watchdog_s: float | None = None,
            plain: bool = False) -> str:
    """``case`` on ``path``, pressed into a paste-able snippet ending in the
    comment ``said`` (what happens; what should); with ``comparison`` (an
    oracle's `fuzz.oracles.base.Comparison`, as a dict), printing both
    sides of what the oracle compared (``jax.vmap`` and the calls one by one);
    with ``watchdog_s``, a hang's, stopping itself after that long, saying
    where it was stuck (exit 1), as its reproducer does; with ``plain``, the
    path's plain form (`fuzz.paths.program`), as its reproducer was."""
    text = paths.program(case, path, jit=jit, plain=plain)[0]
    if comparison is not None:
        text = text.replace(paths.RUN, "\n").replace(paths.RUN_JIT, "\n") + comparison["source"] + (
            f"\nprint({comparison['actual_by'] + ':'!r}, actual())"
            f"\nprint({comparison['expected_by'] + ':'!r}, expected())\n")
    for run, call in _RUN.items():
        if run in text and (m := _FUNCTION.search(text)):
            f, args = _split(m.group(2))   # ``return f, (args...)``: f(args...) inline
            body = "".join(line[4:] + "\n" for line in m.group(1).splitlines())
            text = text.replace(m.group(0), body).replace(
                run, f"print([x.tolist() for x in {call.format(f=f, args=args)}])")
    if "print(" not in text:
        text += "\nprint(run())\n"
    x64 = "X64 = True" in text
    text = _merged(_pruned(text))
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
    lines = _copies_joined(_one_line_defs(_returns_inlined(_inlined(lines))))
    body = "\n".join(lines)
    kept = [line for line in lines if line not in _IMPORTS or re.search(_IMPORTS[line], body)]
    kept = _imports_joined(kept)
    # The snippet starts JAX itself: its mesh's devices asked for outright.
    kept = [m.group(1) if (m := _DEVICES.match(line)) else line for line in kept]
    if x64:   # as the reproducer runs: under the enable_x64 context manager, which
        # (thread-local) reaches less than the global flag: not a TPU interpreter's callbacks
        kept = [f"with {compat.ENABLE_X64}(True): {line}" if line.startswith("print(") else line
                for line in kept]
    if watchdog_s:
        kept.insert(0, reproducer.WATCHDOG.format(limit=watchdog_s))
    if said:
        kept.append("# " + " ".join(said.split()))
    return "\n".join(kept) + "\n"


def _merged(text: str) -> str:
    """``text`` with the kernel merged into the wrapper that calls it with the
    kernel's own parameters."""
    kernel, wrapper = _KERNEL.search(text), _WRAPPER.search(text)
    if not (kernel and wrapper) or len(re.findall(r"\bkernel\(", text)) != 2 or \
            [a.strip() for a in wrapper.group(4).split(",") if a.strip()] != \
            [p.strip() for p in kernel.group(1).split(",") if p.strip()]:
        return text
    merged = f"def {wrapper.group(1)}({wrapper.group(2)}):\n{wrapper.group(3)}{kernel.group(2).rstrip()}\n"
    return text.replace(kernel.group(0), "").replace(wrapper.group(0), merged)


def _pruned(text: str) -> str:
    """``text`` less what it never uses: each top-level function or
    constant no other line names, and each parameter a function called once
    never reads, with the argument that call passes it."""
    while True:
        tree = ast.parse(text)
        lines = text.splitlines(keepends=True)
        for node in tree.body:
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
            rest = "".join(lines[:first - 1] + lines[node.end_lineno:])
            # (a comment or docstring naming it, "run() under enable_x64", is no use of it)
            used = {n.id for n in ast.walk(ast.parse(rest)) if isinstance(n, ast.Name)}
            if (name := _defined(node)) and name not in used:
                text = rest
                break
        else:
            dropped = next((d for node in tree.body if isinstance(node, ast.FunctionDef)
                            if (d := _unread_dropped(text, tree, node))), None)
            if dropped is None:
                return text
            text = dropped


def _defined(node: ast.stmt) -> str | None:
    """The name a top-level function, one-name assignment or one-name
    ``from`` import defines."""
    if isinstance(node, ast.ImportFrom) and len(node.names) == 1:
        return node.names[0].asname or node.names[0].name
    if isinstance(node, ast.FunctionDef):
        return node.name
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _unread_dropped(text: str, tree: ast.Module, function: ast.FunctionDef) -> str | None:
    """``text`` with ``function``'s parameters that its body never reads
    dropped, and the arguments its one call (before any ``*args``) passes
    them; None where there are none, or it is not called so."""
    params = [a.arg for a in function.args.args]
    read = {n.id for statement in function.body for n in ast.walk(statement) if isinstance(n, ast.Name)}
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == function.name]
    # (called as ``f(...)``, or as ``jax.jit(f)(...)``)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and (n.func in uses or (
        isinstance(n.func, ast.Call) and ast.unparse(n.func.func) == "jax.jit"
        and n.func.args and n.func.args[0] in uses and len(n.func.args) == 1))]
    if len(uses) != 1 or len(calls) != 1 or calls[0].keywords or function.args.vararg:
        return None
    call = calls[0]
    plain = next((k for k, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))
    unread = [k for k, p in enumerate(params) if p not in read and k < plain]
    if not unread:
        return None
    args = [ast.get_source_segment(text, a) for k, a in enumerate(call.args) if k not in unread]
    text = _spliced(text, call, f"{ast.get_source_segment(text, call.func)}({', '.join(args)})")
    kept = ", ".join(p for k, p in enumerate(params) if k not in unread)
    return re.sub(rf"^def {function.name}\([^)]*\):", f"def {function.name}({kept}):", text,
                  count=1, flags=re.M)


def _spliced(text: str, node: ast.AST, source: str) -> str:
    """``text`` with ``node``'s source replaced by ``source``."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return (text[:starts[node.lineno - 1] + node.col_offset] + source
            + text[starts[node.end_lineno - 1] + node.end_col_offset:])


def _inlined(lines: list[str]) -> list[str]:
    """``lines`` with each constant used on one line only put in its place."""
    for line in list(lines):
        if not (m := _CONSTANT.match(line)):
            continue
        name, uses = re.compile(rf"\b{m.group(1)}\b"), [i for i, other in enumerate(lines)
                                                        if other != line and m.group(1) in other]
        if len(uses) == 1 and len(name.findall(lines[uses[0]])) == 1:
            lines[uses[0]] = name.sub(lambda _: m.group(2), lines[uses[0]])
            lines.remove(line)
    return lines


def _returns_inlined(lines: list[str]) -> list[str]:
    """``lines`` with each top-level function of no parameters that only
    returns an expression, called once, put in the place of its call."""
    for k in range(len(lines) - 2, -1, -1):
        m = re.match(r"def (\w+)\(\):$", lines[k])
        if not (m and lines[k + 1].startswith("    return ") and
                (k + 2 == len(lines) or not lines[k + 2].startswith(" "))):
            continue
        call = f"{m.group(1)}()"
        uses = [i for i, line in enumerate(lines)
                if i != k and re.search(rf"\b{m.group(1)}\b", line)]
        if len(uses) == 1 and lines[uses[0]].count(call) == 1:
            lines[uses[0]] = lines[uses[0]].replace(call, lines[k + 1][len("    return "):])
            del lines[k:k + 2]
    return lines


def _copies_joined(lines: list[str]) -> list[str]:
    """``lines`` with a copy started and waited on at once (``X.start()``,
    then ``X.wait()``) made once and kept in ``copy``, on one line."""
    out = []
    for line in lines:
        m = re.match(r"(\s*)(\S.*)\.wait\(\)$", line)
        if m and out and out[-1] == f"{m.group(1)}{m.group(2)}.start()" \
                and not re.search(r"\bcopy\b", m.group(2)):
            out[-1] = f"{m.group(1)}copy = {m.group(2)}; copy.start(); copy.wait()"
        else:
            out.append(line)
    return out


def _imports_joined(lines: list[str]) -> list[str]:
    """``lines`` with its ``import x`` lines as one, and its ``from x import
    y`` lines as another."""
    froms = [line for line in lines if re.match(r"from [\w.]+ import \w+( as \w+)?$", line)]
    if len(froms) >= 2:
        at = lines.index(froms[0])
        lines = [line for line in lines if line not in froms]
        lines.insert(at, "; ".join(froms))
    plain = [line for line in lines if re.match(r"import [\w.]+( as \w+)?$", line)]
    if len(plain) < 2:
        return lines
    at = lines.index(plain[0])
    rest = [line for line in lines if line not in plain]
    return [*rest[:at], "import " + ", ".join(line[len("import "):] for line in plain), *rest[at:]]


def _one_line_defs(lines: list[str]) -> list[str]:
    """``lines`` with each nested function of one short statement on one
    line (a pipeline's body, most often)."""
    depth = lambda line: len(line) - len(line.lstrip())
    out = []
    for line in lines:
        if len(out) >= 2 and depth(out[-2]) > 0 and out[-2].lstrip().startswith("def ") and \
                depth(line) <= depth(out[-2]) < depth(out[-1]) and \
                len(out[-2]) + len(out[-1].strip()) < WIDTH and not out[-1].rstrip().endswith(":"):
            out[-2:] = [f"{out[-2]} {out[-1].strip()}"]
        out.append(line)
    return out


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
    """What happens and what should, in the words JAX prints, from a verified
    reproducer's output; a crash or a hang prints nothing, so its ``message``
    (the finding's) says.

    >>> said({"output": "actual:   results with avals [[[], 'int16']] and values [0]\\n"
    ...                 "expected: no error; results with avals [[[1], 'int16']]"})
    'Bug: result 1 is int16[] (prints [0]); expected: int16[1], as declared'
    """
    if reproducer.get("fatal"):
        return (f"Bug: {message[:200]}; expected: it ends (its result, or a clear error)"
                if message else "")
    out = {k: v.strip() for k, _, v in (line.partition(":") for line in
                                        (reproducer.get("output") or "").splitlines())}
    actual, expected = out.get("actual", ""), out.get("expected", "")
    if not actual:
        return ""
    if actual.startswith("by "):   # an oracle's comparison: "by jax.vmap (2 levels): [...]"
        got, want = (text[3:].partition(": ") for text in (actual, expected))
        return (f"Bug: {got[0]}: {releases.steady(got[2])[:120]}; "
                f"expected, as by {want[0]}: {want[2][:120]}")
    got, want = _results(actual), _results(expected.removeprefix("no error; "))
    if got is None and message and actual.endswith("Traceback (most recent call last):"):
        # (a callback's error prints its traceback; the finding has the error itself)
        bug = "raises " + releases.steady(message).rstrip(":. ")
    elif got is None:
        bug = "raises " + releases.steady(actual).rstrip(":. ")
    elif want is not None and got[0] != want[0]:
        i = next(i for i, (a, b) in enumerate(zip(got[0], want[0])) if a != b) \
            if len(got[0]) == len(want[0]) else None
        if i is not None and got[0][i][1].startswith("python "):   # no Array at all
            return (f"Bug: result {i + 1} is a {got[0][i][1]} (so the print's .tolist() "
                    f"raises AttributeError); expected: an Array {_aval(want[0][i])}, as declared")
        if i is not None:
            return (f"Bug: result {i + 1} is {_aval(got[0][i])} (prints {got[1]}); "
                    f"expected: {_aval(want[0][i])}, as declared")
        bug = f"gives {len(got[0])} results (prints {got[1]})"
    else:
        bug = f"prints {got[1]}"
    if want is not None:   # no error was expected: say what it should print, if known
        expected = f"prints {want[1]}" if got is not None and want[1] else \
            "no error" + (f", prints {want[1]}" if want[1] else "")
    return f"Bug: {bug[:160]}; expected: {expected[:160]}"


# How the reproducer prints results: ``results with avals A[ and values V]``.
_RESULTS = re.compile(r"^results with avals (\[.*?\])(?: and values (.*))?$")


def _results(text: str) -> tuple[list, str] | None:
    """``(avals, values)`` the reproducer printed, or None for an error."""
    if not (m := _RESULTS.match(text)):
        return None
    return ast.literal_eval(m.group(1)), m.group(2) or ""


def _aval(aval) -> str:
    """``[[1, 2], 'int16']`` -> ``int16[1,2]``, as JAX writes an aval."""
    shape, dtype = aval
    return f"{dtype}[{','.join(map(str, shape))}]"

"""Render a case as a standalone Python script for one path.

The program is `fuzz.paths.program`, the very text the live run executes;
this module only adds the lines that report or check its result.
`render` prints one JSON line, the avals and values the script produced or the
error it raised, so a test can compare it with the live run; `render_check`
compares them with what a correct JAX gives and exits 1 when they differ (the
body of a reproducer).
"""
from __future__ import annotations

import inspect
import json

from fuzz import compat, ir, model, paths, serialize
from fuzz.oracles.base import nan_same

_OBSERVE = '''
def observe():
    """What running the kernel gives: its result avals and values, or the error."""
    try:
        with ENABLE_X64(X64):
            # (an error in a callback surfaces only when the results are ready)
            results = jax.block_until_ready(run())
    except Exception as e:
        return {"error": type(e).__name__, "message": first_line(e).partition(": ")[2],
                "mro": [c.__name__ for c in type(e).__mro__], "text": str(e)}
    return {"avals": [[list(r.shape), str(jnp.dtype(r.dtype))] if hasattr(r, "shape")
                      else [[], "python " + type(r).__name__] for r in results],
            "values": [np.asarray(r).tolist() for r in results if not isinstance(r, jax.ShapeDtypeStruct)]}
'''

_MAIN = '''

def main():
    actual = observe()
    if "error" in actual:
        print(json.dumps({"error": actual["error"], "message": actual["message"]}))
        raise SystemExit(1)
    print(json.dumps(actual))


if __name__ == "__main__":
    main()
'''

_CHECK = '''

def problem(actual):
    """Why ``actual`` is not what a correct JAX gives, or None."""
    if "error_types" in EXPECTED:
        if "error" not in actual:
            return "no error was raised"
        if not set(actual["mro"]) & set(EXPECTED["error_types"]):
            return f"raised {actual['error']}, not " + " or ".join(EXPECTED["error_types"])
        if not re.search(EXPECTED["match"], actual["text"]):
            return f"the error message does not match {EXPECTED['match']!r}"
        return None
    if "error" in actual:
        return f"raised {actual['error']}: {actual['message']}"
    if actual["avals"] != EXPECTED["avals"]:
        return f"results have avals {actual['avals']}, expected {EXPECTED['avals']}"
    if "values" in EXPECTED and (len(actual["values"]) != len(EXPECTED["values"]) or any(
            w is not None and a != w for a, w in zip(actual["values"], EXPECTED["values"]))):
        return (f"results are {actual['values']}, expected {EXPECTED['values']}"
                + (" (None: not predicted)" if None in EXPECTED["values"] else ""))
    return None


def main():
    actual = observe()
    if "error" in actual:
        print(f"actual:   {actual['error']}: {actual['message']}")
    else:
        print(f"actual:   results with avals {actual['avals']}"
              + (f" and values {actual['values']}" if actual["values"] else ""))
    print(f"expected: {EXPECTED_TEXT}")
    why = problem(actual)
    print(f"BUG: {why}" if why else "OK: JAX behaves as expected")
    print(json.dumps({"reproduced": why is not None, "error": actual.get("error")}))
    raise SystemExit(1 if why else 0)


if __name__ == "__main__":
    main()
'''


def _program(case: ir.Case, path: str, jit: bool = False, plain: bool = False) -> str:
    """The program `fuzz.paths` runs: imports, inputs, the kernel and
    ``run()`` for ``path`` (under ``jax.jit`` with ``jit``; in the path's
    plain form with ``plain``)."""
    # 64-bit mode as this JAX release spells it (fuzz/compat).
    # (an error is named as the fuzzer names it: a failed callback by its own error)
    return (paths.program(case, path, jit=jit, plain=plain)[0] + "\n\n"
            + inspect.getsource(paths.first_line) + "\n" + _OBSERVE.replace("ENABLE_X64", compat.ENABLE_X64))


def _case_comment(case: ir.Case) -> str:
    # json.dumps escapes every control and non-ASCII character, so no string
    # of the case can end the comment line.
    return "\n".join("# " + line for line in serialize.dumps(case).splitlines())


def render(case: ir.Case, path: str) -> str:
    """A standalone script that runs ``case`` on ``path``."""
    return (_program(case, path) + _MAIN
            + "\n# The case as JSON:\n" + _case_comment(case) + "\n")


def model_values(case: ir.Case, path: str) -> list | None:
    """The values a correct JAX returns on ``path``, by the reference model
    (None where the model gives the case no meaning, or the path returns
    nothing the model predicts)."""
    meaning = model.evaluate(case)
    if meaning.undefined is not None:
        return None
    return paths.MODULES[path].model_results(case, meaning)


def declared_avals(case: ir.Case, path: str) -> list:
    """The result avals a correct JAX gives on ``path``: each ref keeps its aval."""
    return [[list(shape), dtype] for _, (shape, dtype) in paths.MODULES[path].results(case)]


_COMPARE = '''

def main():
    error = None
    with ENABLE_X64(X64):
        want = expected()
        try:
            got = actual()
        except Exception as e:   # the side that raises shows the bug too
            error = type(e).__name__
            got = f"raises {error}: " + (str(e).strip().splitlines() or [""])[0]
    print(f"actual:   by {ACTUAL_BY}: {got}")
    print(f"expected: by {EXPECTED_BY}: {want}")
    if TOLERANCE is None or isinstance(got, str):
        bug = nan_same(got) != nan_same(want)
    else:   # (np.allclose of each pair of results)
        bug = len(got) != len(want) or not all(
            np.shape(a) == np.shape(b) and np.allclose(a, b, rtol=TOLERANCE, atol=TOLERANCE,
                                                       equal_nan=True)
            for a, b in zip(got, want))
    print(f"BUG: {ACTUAL_BY} differs from {EXPECTED_BY}" if bug else "OK: JAX behaves as expected")
    print(json.dumps({"reproduced": bug, "error": error}))
    raise SystemExit(1 if bug else 0)


if __name__ == "__main__":
    main()
'''


def render_comparison(case: ir.Case, path: str, comparison) -> str:
    """A script that runs ``case`` on ``path`` the way an oracle compared it
    (``comparison``, a `fuzz.oracles.base.Comparison`: ``expected()`` against
    ``actual()``), prints both and exits 1 when they differ."""
    labels = (f"\nEXPECTED_BY = {comparison.expected_by!r}\n"
              f"ACTUAL_BY = {comparison.actual_by!r}\n"
              f"TOLERANCE = {comparison.tolerance!r}  # numbers this close are equal (None: exactly)\n")
    return (_program(case, path) + "\n" + labels + comparison.source + "\n\n"
            + inspect.getsource(nan_same)
            + _COMPARE.replace("ENABLE_X64", compat.ENABLE_X64))


def render_check(case: ir.Case, path: str, *, values=None, jit: bool = False,
                 plain: bool = False) -> str:
    """A script that runs ``case`` on ``path``, prints what happened and what
    was expected, and exits 1 when they differ (0 when JAX is right).

    Expected: for an invalid case the clean error ``case.expect``; for a valid
    one no error and every result with its declared aval, and ``values`` (the
    reference model's results, as the script's ``values`` lists) when given."""
    if case.valid:
        expected = {"avals": declared_avals(case, path)}
        text = f"no error; results with avals {expected['avals']}"
        if values is not None:
            expected["values"] = values
            text += f" and values {values}"
    else:
        expected = {"error_types": case.expect.type.split("|"), "match": case.expect.match}
        text = (f"{' or '.join(expected['error_types'])} with a message matching "
                f"{case.expect.match!r} (from {case.expect.primitive})")
    # Literals through repr() of JSON text: data from a corpus file can only
    # ever be a string here, never code.
    constants = (f"import re\nEXPECTED = json.loads({json.dumps(expected)!r})\n"
                 f"EXPECTED_TEXT = {text!r}\n")
    return _program(case, path, jit, plain) + "\n" + constants + _CHECK

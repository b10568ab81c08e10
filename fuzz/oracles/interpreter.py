"""The TPU interpreter's promises about copies (``pltpu.InterpretParams``,
jax/_src/pallas/mosaic/interpret/): a race-free program means the same
under every option (``interpret-options``); its race detector sees no race
in a race-free program and sees a store racing with a copy in flight
(``race-detection``); a kernel that ends with a copy never waited on gets
the "non-zero count at kernel exit" report (``left-over-counts``)."""
from __future__ import annotations

import ast
import re

from fuzz import ir, paths
from fuzz.oracles.base import (SEVERITIES, Comparison, OracleFailure, chained, comparable, groups,
                               leftover_differs, model_judges, program, side_by_side)


class InterpretOptionsMismatch(OracleFailure):
    """The TPU interpreter gives a race-free program another meaning under
    other ``InterpretParams`` (DMA execution mode, uninitialized memory)."""
    oracle = "interpret-options"
    summary = ("the TPU interpreter gives a race-free program another result under other "
               "`InterpretParams` (DMA execution mode, uninitialized memory): {message}")
    wrong_value = True
    RANK, COST = 2.3, 0

    @classmethod
    def applies(cls, report):
        return comparable(report)

    @classmethod
    def compare(cls, report):
        """Each implementation's runs under other options against its first."""
        found = []
        for runs in (g for g in groups(report) if len(g) > 1):
            found += chained(cls, report.case, runs)
            found += [f for a in runs for b in runs for f in leftover_differs(cls, report.case, a, b)]
            report.count(cls.oracle)
        return found


# How the model says a kernel store races with a copy in flight
# (fuzz/ops/dma/common.py), or a remote copy with the stores of its
# receiver's kernel start (fuzz/model.py, Memory.unordered). A read racing
# with one is racy too, but JAX may drop a load whose value goes unused, so
# only stores are sure to be seen.
_KERNEL_RACE = re.compile(r"writes the (destination|source)|\(only the kernel's start\)")


class RaceDetectionMismatch(OracleFailure):
    """The TPU interpreter's race detector disagrees with the model: it sees
    a race in a race-free program, or misses one between the kernel and a
    copy in flight."""
    oracle = "race-detection"
    summary = "the TPU interpreter's race detector (`detect_races=True`) is wrong: {message}"
    RANK, COST = 2.1, 0

    @classmethod
    def needs_run(cls, report, path):
        """A race between a kernel store and a copy is one that a race
        detector (``DETECTS_RACES``) must see, so its path runs the program."""
        meaning = report.meaning
        return (meaning.verdict == "racy"
                and bool(paths.fact(path, "DETECTS_RACES"))
                and _KERNEL_RACE.search(meaning.undefined) is not None)

    @classmethod
    def compare(cls, report):
        found, case, meaning = [], report.case, report.meaning
        judged = [o for o in report.fine if o.races is not None]
        if judged:
            report.count(cls.oracle)
        for o in judged:
            if o.races and meaning.verdict == "defined":   # an unwaited copy races with the end
                found.append(cls.fail(case, "?", o.path,
                                      "the race detector reports a race in a race-free program",
                                      program(case), shape="race|reported in a race-free program"))
            if not o.races and cls.needs_run(report, o.path):
                found.append(cls.fail(case, "dma_start", o.path,
                                      "the race detector misses a race with a copy",
                                      program(case) + f"\nmodel: {meaning.undefined}",
                                      shape="race|missed"))
        return found


class LeftoverMissed(OracleFailure):
    """A kernel that ends with a copy never waited on (its DMA semaphore
    non-zero) runs with no word of the count left over, which JAX documents
    as a crash on hardware."""
    oracle = "left-over-counts"
    summary = ("a kernel that ends with a copy never waited on runs with no word of the "
               "count left over: {message}")
    RANK, COST = 2.4, 0

    @classmethod
    def severity(cls, symptom):
        return SEVERITIES[3]   # the report JAX promises is missing

    @classmethod
    def applies(cls, report):
        if report.meaning is None or report.meaning.verdict != "unwaited":
            return "the kernel waits on every copy it starts"
        return None

    @classmethod
    def compare(cls, report):
        case = report.case
        judged = [o for o in report.fine if o.leftover is not None and model_judges(report, o)]
        if judged:
            report.count(cls.oracle)
        return [cls.fail(case, "dma_start", o.path,
                         "a copy never waited on leaves no count at kernel exit",
                         side_by_side(case, [("left over", "non-zero", o.leftover)],
                                      "expected (model)", f"actual ({o.path})"),
                         shape="count left at exit|zero")
                for o in judged if o.leftover == 0]

    def comparison(self, case: ir.Case, path: str) -> Comparison | None:
        """The count report shown through the interpreter's own options: the
        same kernel under ``dma_execution_mode="eager"`` (which runs the copy
        at its start, and reports the count left) against the default,
        ``"on_wait"``. Only on the path that runs the default."""
        if path != "tpu_interpret" or "pltpu.InterpretParams()" not in (
                text := paths.program(case, path)[0]):
            return None
        body, *returned = paths.function_parts(text)
        call, args = (ast.get_source_segment(text, e) for e in returned)
        lines = text.splitlines(keepends=True)[body[0].lineno - 1:body[-1].end_lineno] if body else []
        source = ("\n\ndef left_over(mode):\n"
                  + "".join(lines).replace("pltpu.InterpretParams()",
                                           "pltpu.InterpretParams(dma_execution_mode=mode)")
                  # (on one line: a snippet has 15)
                  + "    with contextlib.redirect_stdout(io.StringIO()) as printed: "
                  + f"jax.block_until_ready({call}{args}); "
                  + 'return "at kernel exit" in printed.getvalue()\n')
        return Comparison("import contextlib\nimport io\n" + source + _SIDES,
                          "dma_execution_mode='eager'", "dma_execution_mode='on_wait' (the default)")


# Whether the TPU interpreter reports a count left at kernel exit (it
# prints it) under each DMA execution mode.
_SIDES = '''

def expected():
    return left_over("eager")


def actual():
    return left_over("on_wait")
'''

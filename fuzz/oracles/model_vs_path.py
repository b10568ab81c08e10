"""``model-vs-path``: each evaluating path's run against what the reference
model (fuzz/model.py) says the program means: every read, every final
count and data ref a path shows, and the count the TPU interpreter reports
left over at kernel exit."""
from __future__ import annotations

import numpy as np

from fuzz import ir, model
from fuzz.oracles.base import (OracleFailure, leftover_fits, model_judges, nan_same, nonzero,
                               read_name, relation, side_by_side, statement_kind)


def _shape(case, observed: str, writer, want, got) -> str:
    effect = model.effect(case.statements[writer]) if writer is not None else 0
    return f"{observed}|{statement_kind(case, writer)}|{relation(want, got, effect)}"


class ModelMismatch(OracleFailure):
    """A path computed other reads or counts than the reference model."""
    oracle = "model-vs-path"
    summary = ("the program computed another value than its statements define (each "
               "read, store and count as JAX documents it): {message}")
    wrong_value = True
    RANK, COST = 2.0, 0

    @classmethod
    def compare(cls, report):
        found = []
        for o in report.fine:
            if model_judges(report, o):
                found += cls.against_model(report.case, report.meaning, o)
                report.count(cls.oracle)
        return found

    @classmethod
    def against_model(cls, case: ir.Case, meaning: model.Meaning, outcome) -> list[OracleFailure]:
        """Where ``outcome`` (an error-free run of a valid case with a
        defined meaning) differs from what the case means."""
        # diffs: (statement to blame, message, shape, where it is seen), in order
        rows, diffs, end = [], [], len(case.statements)
        if outcome.reads is not None:
            rows.append(("reads", list(meaning.reads), list(outcome.reads)))
            reads = [n for n, s in enumerate(case.statements) if s.writes_out]
            for k, (want, got) in enumerate(zip(meaning.reads, outcome.reads)):
                if want != got and k not in meaning.unknown_reads:
                    writer = meaning.read_writers[k]
                    diffs.append((writer, f"{read_name(case, k)} is {got}, expected {want}",
                                  _shape(case, "read", writer, want, got), reads[k % len(reads)]))
        if outcome.state is not None:
            for i, got in outcome.state.items():
                counts = i not in model.data_refs(case)
                want, got = np.asarray(meaning.state[i], dtype=object), np.asarray(got, dtype=object)
                writers = np.asarray(meaning.state_writers[i], dtype=object)
                rows.append((f"r{i}", meaning.state[i], got.tolist()))
                if want.shape != got.shape:
                    diffs.append((None, f"final r{i} has shape {got.shape}, expected {want.shape}",
                                  "final value|shape differs", end))
                    continue
                for at in map(tuple, np.argwhere(np.asarray(_differ(want, got), bool))):
                    if (i, int(np.ravel_multi_index(at, want.shape)) if at else 0) in meaning.unknown:
                        continue
                    where = f"final r{i}{[int(j) for j in at]}"
                    if counts:
                        diffs.append((writers[at], f"{where} is {got[at]}, expected {want[at]}",
                                      _shape(case, "final count", writers[at], int(want[at]),
                                             int(got[at])), end))
                    else:
                        diffs.append((writers[at], f"{where} is {got[at]}, expected {want[at]}",
                                      f"final value|{statement_kind(case, writers[at])}|differs",
                                      end))
        if outcome.leftover is not None:
            counts = nonzero(case, dict(enumerate(meaning.state)))
            rows.append(("left over", counts or 0, outcome.leftover))
            # (a copy never waited on that leaves none: left-over-counts)
            if meaning.verdict != "unwaited" and not leftover_fits(outcome.leftover, counts):
                diffs.append((None, f"count left at kernel exit is {outcome.leftover}, expected "
                                    f"{'one of those left non-zero' if counts else 0}",
                              f"count left at exit|{'non-zero' if counts else 'zero'} expected",
                              end))
        # An element the program never touched shows where a value went, not
        # which statement sent it there: prefer a difference with a statement
        # to blame. One difference per statement to blame, so that a known bug
        # in one statement hides no other statement's.
        blamed = [d for d in diffs if d[0] is not None]
        first = {}
        for d in blamed or diffs[:1]:
            first.setdefault(d[0], d)
        details = side_by_side(case, rows, "expected (model)", f"actual ({outcome.path})")
        return [cls.fail(case, "?" if writer is None else case.statements[writer].primitive,
                         outcome.path, message, details, shape=shape, statement=writer,
                         seen_at=seen_at)
                for writer, message, shape, seen_at in first.values()]


# Where two arrays of Python values differ, a NaN the same value as any NaN (`nan_same`).
_differ = np.frompyfunc(lambda a, b: nan_same(a) != nan_same(b), 2, 1)

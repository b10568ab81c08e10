"""``valid-runs`` and ``invalid-rejected``: a valid program runs on every
path; an invalid one gets the clean error a user should get (the case's
``expect``: its type, a message pattern, the primitive that raises it)."""
from __future__ import annotations

import re

from fuzz import blame, ir, paths
from fuzz.suppressions import unsupported
from fuzz.oracles.base import SEVERITIES, OracleFailure


def _where(outcome, probe) -> int | None:
    """The statement being traced, discharged or lowered when it raised."""
    at = blame.of_error(outcome.error)
    return probe.failed_at if at is None else at


_PRIMITIVE_IN_FRAME = re.compile(r"(semaphore_(?:signal|wait|read))")


def _primitive_in_traceback(error: BaseException | None) -> str:
    """The semaphore primitive whose rule (abstract eval, discharge, ...) the
    error passed through last, or "?"."""
    found, tb = "?", error.__traceback__ if error is not None else None
    while tb is not None:
        if m := _PRIMITIVE_IN_FRAME.search(tb.tb_frame.f_code.co_name):
            found = m.group(1)
        tb = tb.tb_next
    return found


def matches(expect: ir.ExpectedError, error: BaseException) -> bool:
    """Whether ``error`` is the clean error ``expect`` names."""
    names = {c.__name__ for c in type(error).__mro__}
    return bool(names & set(expect.type.split("|"))) and re.search(expect.match, str(error)) is not None


class UnexpectedError(OracleFailure):
    """A valid case raised."""
    oracle = "valid-runs"
    symptom, stage, error_is_the_symptom = "exception", None, True
    RANK = 1.4
    summary = "a valid program raised `{message}`"

    def symptom_of(self) -> str:
        text = paths.first_line(self.error) if self.error is not None else ""
        # A refusal the unsupported table does not list.
        return "unsupported" if unsupported.says_unsupported(text) else self.symptom

    @classmethod
    def judge(cls, report, outcome, probe):
        if not report.case.valid or outcome.error is None:
            return []
        primitive = probe.failed_in or _primitive_in_traceback(outcome.error)
        return [cls.fail(report.case, primitive, outcome.path, paths.first_line(outcome.error),
                         statement=_where(outcome, probe))]


class _Invalid(OracleFailure):
    """An invalid program's failure: a usability issue, however it fails."""

    @classmethod
    def severity(cls, symptom):
        return SEVERITIES[3]


class SilentAcceptance(_Invalid):
    """An invalid case ran without the error a user should get."""
    oracle = "invalid-rejected"
    symptom, stage, error_is_the_symptom = "missing error", "trace", True
    RANK = 1.4
    summary = ("an invalid use of `{primitive}` should be rejected with {wanted}, but runs "
               "without any error")

    @classmethod
    def judge(cls, report, outcome, probe):
        expect = report.case.expect
        if report.case.valid or outcome.error is not None:
            return []
        return [cls.fail(report.case, expect.primitive, outcome.path, (
            f"{expect.primitive} ran without error; expected "
            f"{expect.type} matching {expect.match!r}"))]


class WrongError(_Invalid):
    """An invalid case raised, but not the clean error a user should get."""
    oracle = "invalid-rejected"
    symptom, stage, error_is_the_symptom = "exception", None, True
    RANK = 1.4
    summary = ("an invalid use of `{primitive}` should be rejected with {wanted}, but fails "
               "with an unrelated error instead: {error}")

    @classmethod
    def judge(cls, report, outcome, probe):
        expect = report.case.expect
        if report.case.valid or outcome.error is None or matches(expect, outcome.error):
            return []
        return [cls.fail(report.case, expect.primitive, outcome.path, (
            f"{paths.first_line(outcome.error)}; expected {expect.type} "
            f"matching {expect.match!r} from {expect.primitive}"), statement=_where(outcome, probe))]

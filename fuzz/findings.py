"""Findings: one record per distinct bug, however often and wherever it is hit.

A failure (an `oracles.OracleFailure`, or a `Crash` of a campaign worker) gets
a `signature`; equal signatures are one finding. `record` is the way in: the
first sighting of a signature is minimized, gets a reproducer verified in a
fresh interpreter, a regression file in ``corpus/regressions/`` and a report in
``reports/``; later sightings only update the counts.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import os
import platform
import re
import time
import traceback
from dataclasses import dataclass, field

from fuzz import corpus, ir, minimize as minimizer, oracles, paths, reports, reproducer, serialize

CRASH_SYMPTOMS = ("crash", "timeout", "oom")
_TOP_FRAMES = 3


class Crash:
    """A campaign worker that died on ``case`` (no Python exception to look
    at). It carries the facts an oracle's class does (`oracles.OracleFailure`)."""
    oracle = "crash"
    error = None
    known = shape = None
    stage = "execution"
    error_is_the_symptom = wrong_value = under_jit = False
    fatal = True    # the process dying (or hanging) is the bug
    summary = "the process running the kernel died: {message}"

    def __init__(self, case: ir.Case | None, path: str, symptom: str, detail: str,
                 primitive: str = "?", limit_s: float | None = None):
        if symptom not in CRASH_SYMPTOMS:
            raise ValueError(f"symptom {symptom!r} not in {CRASH_SYMPTOMS}")
        self.case, self.path, self.symptom, self.detail = case, path, symptom, detail
        self.primitive = primitive   # of the statement it died in, where the stack says
        # A hang's: the seconds without progress it was killed after, which
        # its reproducer waits before it calls the hang reproduced.
        self.limit_s = limit_s
        self.message = f"{symptom}: {detail}"

    def symptom_of(self) -> str:
        return self.symptom

    def __str__(self):
        return f"[crash] {self.path}: {self.message}"

    def __repr__(self):
        return f"Crash({self.path!r}, {self.symptom!r}, {self.detail!r})"


# --- signatures ---------------------------------------------------------------

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_REF_NAME = re.compile(r"\b[sr]\d+\b")         # our ref names r0, r1 (s0: before schema 2)
_NUMBER = re.compile(r"(?<![A-Za-z_\d])-?\d+")  # not the 16 of int16
_NUMBER_RUN = re.compile(r"N(?:\s*,\s*N)*(?:,(?=\s*[)\]]))?")   # (2,) and (2, 3) alike: any rank


def normalize(message: str) -> str:
    """``message`` with addresses, ref names, numbers and shapes made generic."""
    text = _ADDRESS.sub("ADDR", message)
    text = _REF_NAME.sub("sN", text)
    text = _NUMBER.sub("N", text)
    return _NUMBER_RUN.sub("N", text).strip()


def jax_frames(error: BaseException, n: int = _TOP_FRAMES) -> list[str]:
    """The innermost ``n`` frames inside the jax package, as ``file:function``
    relative to it (no line numbers: they move between releases)."""
    import jax
    root = os.path.dirname(os.path.dirname(os.path.abspath(jax.__file__))) + os.sep
    tb = error.__traceback__
    cause = error.__cause__
    if type(cause).__name__ == "UnfilteredStackTrace":  # JAX_TRACEBACK_FILTERING=remove_frames
        tb = cause.__traceback__
    frames = [f for f in traceback.extract_tb(tb)
              if f.filename.startswith(root + "jax" + os.sep)]
    return [f"{f.filename[len(root):]}:{f.name}" for f in frames[-n:]]


def signature(failure) -> str:
    """Stable across runs, programs, paths and minimization for one bug, and
    different for two. An exception: oracle, primitive, exception type, its
    normalized message (not the expected error's) and the innermost JAX
    frames. A wrong value: oracle, primitive, path and the failure's shape
    (what is observed through which kind of statement, and how it relates to
    the right value; `fuzz.differential`), never the bare message. Any other
    broken invariant: oracle, primitive and its normalized message. Last, the
    known finding it is an instance of, if any: a new bug that fails like a
    known one elsewhere is another finding, and minimizing a finding keeps
    the known bug's trigger."""
    error = failure.error if failure.error_is_the_symptom else None
    if error is not None:
        parts = [type(error).__name__, normalize(paths.first_line(error)),
                 ">".join(jax_frames(error)) or "-"]
    elif failure.shape:
        parts = [failure.path, failure.shape]
    else:
        parts = ["-", normalize(failure.message), "-"]
    return "|".join([failure.oracle, failure.primitive, *parts, failure.known or "-"])


def finding_id(sig: str) -> str:
    oracle, primitive = sig.split("|", 2)[:2]
    short = primitive.removeprefix("semaphore_").replace("?", "any")
    return f"{oracle}-{short}-{hashlib.sha1(sig.encode()).hexdigest()[:8]}"


def same_failure(sig: str):
    """A predicate: does a case still fail with signature ``sig``?"""
    def still_fails(case: ir.Case) -> bool:
        return any(signature(f) == sig for f in oracles.check(case).failures)
    return still_fails


def paths_affected(case: ir.Case, sig: str) -> tuple[str, ...]:
    """Every path (not only the case's own) on which ``case`` fails with
    ``sig``: each path alone (a check stops at the first tier that fails),
    then all together (for the oracles that compare paths)."""
    everywhere = dataclasses.replace(case, paths=ir.PATHS)
    failures = [f for p in ir.PATHS for f in oracles.check(everywhere, on_paths=(p,)).failures]
    failures += oracles.check(everywhere).failures
    return tuple(dict.fromkeys(f.path for f in failures if signature(f) == sig))


# --- what kind of bug ---------------------------------------------------------

_STAGE_MARKERS = (  # most telling first: interpret mode discharges while lowering
    ("discharge", ("state/discharge.py", "discharge")),
    ("lowering", ("interpreters/mlir.py", "lower")),
    ("execution", ("dispatch.py", "pxla.py", "_execute")),
)


def stage_of(failure) -> str:
    """Where in JAX it goes wrong: trace / discharge / lowering / execution:
    the oracle's own stage, or, where the exception is the failure, read off
    its frames."""
    error = failure.error if failure.error_is_the_symptom else None
    if failure.stage is not None or error is None:
        return failure.stage or "trace"
    frames = jax_frames(error, n=10**6)
    for stage, markers in _STAGE_MARKERS:
        if any(m in frame for frame in frames for m in markers):
            return stage
    return "trace"


# --- the record ---------------------------------------------------------------

@dataclass
class Finding:
    id: str
    signature: str
    oracle: str
    primitive: str
    exception: str | None
    message: str
    symptom: str
    stage: str
    case: ir.Case | None
    paths: tuple[str, ...]
    versions: dict
    first_seen: str
    last_seen: str
    hits: int = 1
    # new | still failing | fixed in this JAX | flaky (its reproducer did not
    # reproduce: kept apart in reports/flaky/, never new) | unverified (--no-verify)
    status: str = "new"
    known: str | None = None     # id in fuzz.known_findings, if it is one
    reproducer: dict = field(default_factory=dict)  # path, status, exit_code, output, seconds
    minimized: dict = field(default_factory=dict)   # seconds, attempts, statements before/after
    # Filed findings that look alike (same oracle, primitive and exception
    # type) but differ in signature: possibly one cause, for a reader to judge.
    related: list = field(default_factory=list)
    # What `discharge-fuzz bisect` found: {"releases": {release: {"verdict",
    # "detail"}}, "affected": {"first_bad", "last_good", "summary", ...}}.
    releases: dict = field(default_factory=dict)

    @property
    def kernel_lines(self) -> int | None:
        if self.case is None:
            return None
        from fuzz import emit
        return len(emit.kernel_source(self.case).splitlines()) - 1  # without the def line

    def to_record(self) -> dict:
        d = dataclasses.asdict(self)
        d["case"] = serialize.to_data(self.case) if self.case is not None else None
        d["paths"] = list(self.paths)
        d["kernel_lines"] = self.kernel_lines
        return d

    @classmethod
    def from_record(cls, d: dict) -> "Finding":
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in d.items() if k in names}
        kwargs["case"] = serialize.from_data(d["case"]) if d.get("case") is not None else None
        kwargs["paths"] = tuple(d.get("paths", ()))
        return cls(**kwargs)


def versions() -> dict:
    import jax
    import jaxlib
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "python": platform.python_version()}


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


@contextlib.contextmanager
def _locked(directory):
    """An exclusive lock on ``directory`` (a lock file in it), so that two
    processes recording the same signature do not lose each other's counts."""
    import fcntl
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


FLAKY = "flaky"   # reports/flaky/: findings whose reproducer did not reproduce


def record(failure, *, corpus_dir="corpus", reports_dir="reports", minimize=True,
           verify=True, verify_prelude: str | None = None) -> tuple[Finding, bool]:
    """File ``failure``: (its finding, whether it is new). A finding whose
    reproducer does not reproduce is *flaky*: its report goes to
    ``reports/flaky/``, no regression is written, and it is never new.

    ``verify_prelude`` is Python run before the reproducer in the verifying
    interpreter (tests use it to plant a bug there too)."""
    sig = signature(failure)
    fid = finding_id(sig)
    if (seen := _count_again(fid, reports_dir)) is not None:
        return seen, False
    finding = _investigate(failure, sig, fid, minimize=minimize, verify=verify,
                           prelude=verify_prelude)
    status = (finding.reproducer or {}).get("status")
    if not verify:
        finding.status = "unverified"
    elif status != "reproduces":
        finding.status = FLAKY
    with _locked(reports_dir):
        if _load(reports_dir, fid) is None:  # nobody filed it meanwhile
            finding.related = _alike(finding, reports_dir)
            if finding.status == FLAKY:
                reports.write(os.path.join(reports_dir, FLAKY), finding)
                return finding, False
            if finding.case is not None:
                corpus.write_regression(corpus_dir, finding)
            reports.write(reports_dir, finding)
            return finding, True
    return _count_again(fid, reports_dir), False


def _alike(finding: Finding, reports_dir) -> list[str]:
    return [r["id"] for r in reports.records(reports_dir)
            if (r["oracle"], r["primitive"], r.get("exception"))
            == (finding.oracle, finding.primitive, finding.exception)]


def _load(reports_dir, fid: str) -> tuple[str, dict] | None:
    """(directory, record) of ``fid``, filed or flaky."""
    for directory in (reports_dir, os.path.join(reports_dir, FLAKY)):
        if (data := reports.load(directory, fid)) is not None:
            return directory, data
    return None


def _count_again(fid: str, reports_dir) -> Finding | None:
    with _locked(reports_dir):
        found = _load(reports_dir, fid)
        if found is None:
            return None
        directory, data = found
        finding = Finding.from_record(data)
        finding.hits += 1
        finding.last_seen = now()
        if finding.status != FLAKY:
            finding.status = "still failing"
        reports.write(directory, finding)
        return finding


def _investigate(failure, sig, fid, *, minimize, verify, prelude) -> Finding:
    """Minimize, find the paths affected and a verified reproducer."""
    case = failure.case
    crash = isinstance(failure, Crash)
    minimized = {}
    if minimize and not crash and case is not None:
        start = time.perf_counter()
        result = minimizer.minimize(case, same_failure(sig))
        minimized = {"seconds": round(time.perf_counter() - start, 2),
                     "attempts": result.attempts,
                     "statements_before": len(case.body),
                     "statements_after": len(result.case.body)}
        case = result.case
    affected = (failure.path,) if crash or case is None else (
        paths_affected(case, sig) or (failure.path,))
    known = failure.known   # part of the signature, so the minimized case keeps it
    repro = {}
    if case is not None:
        repro = reproducer.best(case, affected, failure, verify=verify, prelude=prelude,
                               finding_id=fid)
    seen = now()
    error = failure.error if failure.error_is_the_symptom else None
    return Finding(
        id=fid, signature=sig, oracle=failure.oracle, primitive=failure.primitive,
        exception=type(error).__name__ if error is not None else None,
        message=failure.message, symptom=failure.symptom_of(), stage=stage_of(failure),
        case=case, paths=affected, versions=versions(), first_seen=seen, last_seen=seen,
        known=known, reproducer=repro, minimized=minimized)

"""Findings: one record per distinct bug, however often and wherever it is hit.

A failure (an `oracles.OracleFailure`, or a `Crash` of a campaign worker) gets
a `signature`; equal signatures are one finding, a `Finding`. Filing one
(minimized, a verified reproducer, a regression and a report) is
`fuzz.triage.filing.record`'s.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import hashlib
import os
import platform
import re
import traceback
from dataclasses import dataclass, field

import jax
import jaxlib

from fuzz import emit, ir, oracles, paths, serialize
from fuzz.suppressions import known_findings
from fuzz.triage import isolate

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

    @staticmethod
    def severity(symptom: str) -> str:
        return oracles.SEVERITIES[1]   # a crash, a hang or running out of memory

    def __str__(self):
        return f"[crash] {self.path}: {self.message}"

    def __repr__(self):
        return f"Crash({self.path!r}, {self.symptom!r}, {self.detail!r})"


# --- signatures ---------------------------------------------------------------

_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_REF_NAME = re.compile(r"\b[sr]\d+\b")         # our ref names r0, r1 (s0: before schema 2)
_NUMBER = re.compile(r"(?<![A-Za-z_\d])-?\d+")  # not the 16 of int16
_NUMBER_RUN = re.compile(r"N(?:\s*,\s*N)*(?:,(?=\s*[)\]]))?")   # (2,) and (2, 3) alike: any rank


# JAX lists the dtypes a primitive accepts in set order, which changes from
# process to process ("subtypes of integer, floating, complexfloating").
_SUBTYPES = re.compile(r"(subtypes of )(\w+(?:, \w+)+)")
# Where JAX is installed, which a message may name ("when tracing while at
# /.../site-packages/jax/_src/dispatch.py:N"): it differs from machine to machine.
_INSTALLED_AT = re.compile(r"(?:/[^\s/:]+)+/site-packages/")


def normalize(message: str) -> str:
    """``message`` with addresses, ref names, numbers and shapes made
    generic, and lists JAX writes in no fixed order sorted."""
    text = _SUBTYPES.sub(lambda m: m[1] + ", ".join(sorted(m[2].split(", "))), message)
    text = _INSTALLED_AT.sub("", text)
    text = _ADDRESS.sub("ADDR", text)
    text = _REF_NAME.sub("sN", text)
    text = _NUMBER.sub("N", text)
    return _NUMBER_RUN.sub("N", text).strip()


def jax_frames(error: BaseException, n: int = _TOP_FRAMES) -> list[str]:
    """The innermost ``n`` frames inside the jax package, as ``file:function``
    relative to it (no line numbers: they move between releases)."""
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
    the right value; `fuzz.oracles.base.relation`), never the bare message. Any other
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


# The discharge code, where a raised error is blamed on (not lax's shape
# checks, which many unrelated bugs reach).
_DISCHARGE_CODE = ("jax/_src/state/", "jax/_src/pallas/")


def raised_in(frames: list[str]) -> str | None:
    """The JAX function (``file:function``) an exception is blamed on, of its
    JAX frames (outermost first): the innermost frame of the discharge code
    it came through, else its innermost JAX frame."""
    return next((f for f in reversed(frames) if f.startswith(_DISCHARGE_CODE)),
                frames[-1] if frames else None)


def root_cause(failure) -> str:
    """Where JAX goes wrong, whichever oracle, primitive or path saw it: one
    key for every face of one bug, two for two bugs.

    - a known finding's: its id, or the id of the entry it shares its root
      cause with (`KnownFinding.same_as`: a maintainer's review);
    - an exception's (a comparison side's too): its type, its normalized
      message and the innermost frame of the discharge code it came
      through (else its innermost JAX frame): the JAX function that
      raised, however the program reached it;
    - a hang's or a crash's: its symptom and where it was stuck;
    - a wrong value's: the rule that computed it, isolated by cutting the
      case short (`fuzz.triage.isolate`), and how the value is wrong;
    - anything else (an invariant a probe saw, a wrong value no cut shows):
      its signature."""
    if failure.known:
        k = known_findings.BY_ID.get(failure.known)
        return f"known:{known_findings.root_id(k) if k is not None else failure.known}"
    if isinstance(failure, Crash):
        stuck = re.search(r", in (\S+)$", failure.message)
        return f"{failure.symptom}:{stuck[1] if stuck else normalize(failure.detail)}"
    # (a comparison's side that raised is blamed as the exception it is)
    error = failure.error if failure.error_is_the_symptom else getattr(failure, "raised", None)
    if error is not None:
        blamed = raised_in(jax_frames(error, n=10**6)) or "-"
        return f"{type(error).__name__}:{normalize(paths.first_line(error))}:{blamed}"
    if (found := isolate.culprit(failure)) is not None:
        return found.key
    return f"signature:{signature(failure)}"


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
    known: str | None = None     # id in fuzz.suppressions.known_findings, if it is one
    reproducer: dict = field(default_factory=dict)  # path, status, exit_code, output, seconds
    minimized: dict = field(default_factory=dict)   # seconds, attempts, statements before/after
    # Filed findings that look alike (same oracle, primitive and exception
    # type) but differ in signature: possibly one cause, for a reader to judge.
    related: list = field(default_factory=list)
    # What `discharge-fuzz bisect` found: {"releases": {release: {"verdict",
    # "detail"}}, "affected": {"first_bad", "last_good", "summary", ...}}.
    releases: dict = field(default_factory=dict)
    root_cause: str | None = None   # `root_cause`: one report per key
    # The other faces of this root cause, filed here rather than as reports
    # of their own: {"id", "signature", "oracle", "primitive", "paths",
    # "hits", "first_seen", "last_seen"} each.
    instances: list = field(default_factory=list)

    @property
    def kernel_lines(self) -> int | None:
        if self.case is None:
            return None
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
    """What a finding was seen (or seen again) on: its report's versions and
    System info, kept so that rewriting the report elsewhere does not change them."""
    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "python": platform.python_version(),
            "environment": environment()}


@functools.lru_cache(maxsize=1)
def environment() -> str:
    """JAX's account of this machine (slow: asked once)."""
    return jax.print_environment_info(return_string=True).strip()


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")

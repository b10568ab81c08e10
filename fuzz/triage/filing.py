"""Filing a failure as a finding: `record` is the way in. The first
sighting of a signature is minimized, gets a reproducer verified in a fresh
interpreter, a regression file in ``corpus/regressions/`` and a report in
``reports/``; later sightings only update the counts (under a lock, so two
processes filing one signature do not lose each other's).
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import time

from fuzz import ir, oracles, paths
from fuzz.triage import corpus, minimize as minimizer, reports, reproducer
from fuzz.triage.findings import (Crash, Finding, finding_id, now, paths_affected, root_cause,
                                  same_failure, signature, stage_of, versions)


@contextlib.contextmanager
def _locked(directory):
    """An exclusive lock on ``directory`` (a lock file in it), so that two
    processes recording the same signature do not lose each other's counts."""
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
    ``reports/flaky/``, no regression is written, and it is never new. One
    whose root cause (`root_cause`) a filed report has already is another
    face of that bug: it is counted there, as an instance, not minimized or
    reported again, and that report's finding is returned.

    ``verify_prelude`` is Python run before the reproducer in the verifying
    interpreter (tests use it to plant a bug there too)."""
    sig = signature(failure)
    fid = finding_id(sig)
    if (seen := _count_again(fid, reports_dir)) is not None:
        return seen, False
    key = root_cause(failure)
    if (owner := _count_instance(failure, sig, fid, key, reports_dir)) is not None:
        return owner, False
    finding = _investigate(failure, sig, fid, key, minimize=minimize, verify=verify,
                           prelude=verify_prelude)
    finding.root_cause, fid = key, finding.id
    status = (finding.reproducer or {}).get("status")
    if not verify:
        finding.status = "unverified"
    elif status != "reproduces":
        finding.status = FLAKY
    with _locked(reports_dir):
        # Another worker may have filed this root cause while this one was
        # minimized: then it is that report's instance.
        if finding.status != FLAKY and (owner := _as_instance(failure, sig, fid, key,
                                                               reports_dir)) is not None:
            return owner, False
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


def complete(finding_id: str, *, corpus_dir="corpus",
             reports_dir="reports") -> tuple[Finding, bool] | None:
    """Finish filing a finding filed unverified (a campaign stopping filed
    it without minimizing or verifying): run its case again, and file the
    failure of its signature afresh, minimized and verified (`record`'s
    answer: the finding, and whether it is new). None where
    that cannot be done here: no record or case, a crash or hang (it would
    take this process with it), or the case no longer fails so."""
    data = reports.load(reports_dir, finding_id)
    # (seen again meanwhile, it is "still failing", its reproducer still not verified)
    if data is None or (data.get("reproducer") or {}).get("status") != "not verified" \
            or data.get("case") is None or data["oracle"] == Crash.oracle:
        return None
    unverified = Finding.from_record(data)
    failure = next((f for f in oracles.check(unverified.case).failures
                    if signature(f) == unverified.signature), None)
    if failure is None:
        return None
    for path in (os.path.join(reports_dir, f"{finding_id}.{ext}") for ext in ("json", "md", "py")):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(corpus_dir, "regressions", f"{finding_id}.json"))
    return record(failure, corpus_dir=corpus_dir, reports_dir=reports_dir)


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


def _count_instance(failure, sig: str, fid: str, key: str, reports_dir) -> Finding | None:
    """The filed report of root cause ``key`` (another finding's), with
    ``failure`` counted among its instances; None if there is none."""
    with _locked(reports_dir):
        return _as_instance(failure, sig, fid, key, reports_dir)


def _as_instance(failure, sig: str, fid: str, key: str, reports_dir) -> Finding | None:
    """`_count_instance`, under the lock its caller holds."""
    owner = next((r for r in reports.records(reports_dir)
                  if r.get("root_cause") == key and r["id"] != fid), None)
    if owner is None:
        return None
    finding = Finding.from_record(owner)
    seen = now()
    face = next((i for i in finding.instances if i["signature"] == sig), None)
    if face is None:
        face = {"id": fid, "signature": sig, "oracle": failure.oracle,
                "primitive": failure.primitive, "paths": [], "hits": 0, "first_seen": seen}
        finding.instances.append(face)
    face["hits"] += 1
    face["last_seen"] = seen
    face["paths"] = sorted({*face["paths"], failure.path})
    finding.last_seen = seen
    reports.write(reports_dir, finding)
    return finding


def with_real_semaphores(case: ir.Case) -> ir.Case | None:
    """``case`` with each int16 ref that stands in for a semaphore made the
    semaphore type it stands for (``dma`` where copies count on it, else
    ``regular``): the program as a user writes it, with real types. None if
    it has no stand-in (or one counted both ways)."""
    kinds: dict[int, set] = {}
    for stmt in case.statements:
        for view in stmt.counted():
            kinds.setdefault(view.ref, set())
            if not stmt.reads_only:   # pl.semaphore_read takes either kind
                kinds[view.ref].add("dma" if stmt.family == "dma" else "regular")
    stand_ins = {i: k.pop() if k else "regular" for i, k in kinds.items()
                 if case.refs[i].kind == "int16" and len(k) <= 1}
    if not stand_ins:
        return None
    try:
        return dataclasses.replace(case, refs=tuple(
            dataclasses.replace(r, kind=stand_ins[i]) if i in stand_ins else r
            for i, r in enumerate(case.refs)))
    except ir.IRError:   # the int16 ref is data too (a pipeline's block): no real type fits
        return None


def _with_real_types(case: ir.Case, failure, key: str):
    """(``case`` with real semaphore types, its failure of ``failure``'s root
    cause) where the bug shows so too, on a path as public, else None: a
    maintainer pushes back on an int16 array standing in for a semaphore
    (JAX takes it in interpret mode only), and nearly every semaphore bug
    shows with the real type. ``key`` is ``failure``'s root cause, as
    `record` found it (isolating a wrong value's rule costs reruns)."""
    real = with_real_semaphores(case)
    if real is None:
        return None
    # On every path: the stand-in's own (run_state) may take no semaphore type.
    real = dataclasses.replace(real, paths=ir.PATHS)
    try:
        found = [f for f in oracles.check(real).failures if root_cause(f) == key]
    except Exception:  # noqa: BLE001 - the fuzzer cannot run it so: keep the stand-in
        return None
    best = min(found, key=public_first, default=None)
    if best is None or public_first(best)[0] > public_first(failure)[0]:
        # Shown with real types only through JAX internals (abstract): a
        # public path showing it with the stand-in is the better report.
        return None
    shown_on = tuple(dict.fromkeys(p for f in found for p in f.path.split("/")))
    return dataclasses.replace(real, paths=shown_on), best


def public_first(failure) -> tuple:
    """Failures on the ranked public paths first (``PUBLIC_RANK``), then
    the other paths, those needing JAX internals last."""
    ranks = [paths.fact(p, "PUBLIC_RANK") if p in paths.having("PUBLIC_RANK") else
             (99 if p in paths.having("INTERNAL") else 50) for p in failure.path.split("/")]
    return max(ranks), failure.path


def _investigate(failure, sig, fid, key, *, minimize, verify, prelude) -> Finding:
    """Minimize, show it with real semaphore types where it shows so, find
    the paths affected and a verified reproducer."""
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
    if not crash and case is not None and (real := _with_real_types(case, failure, key)):
        # (its signature and id are the real program's, so that its regression
        # replays it; the stand-in's form is then an instance, by root cause)
        case, failure = real
        sig = signature(failure)
        fid = finding_id(sig)
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

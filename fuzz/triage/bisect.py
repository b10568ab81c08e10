"""``discharge-fuzz bisect FINDING... | --all``: which JAX releases a finding affects.

For every finding and every release (default: each since the floor,
`fuzz.triage.releases.KNOWN`), the finding's reproducer is rendered *inside that
release's environment*, by this checkout's code on that release's JAX, so
API drift is handled where reproducers are rendered (`fuzz.compat`), and
then run there in a fresh interpreter, as its report's reproducer is. Each
release gets one verdict:

- ``bad``: it reproduces as the verified reproducer did (the same error
  type, and for a failed callback the same error inside it; or wrong
  results without an error; or the process dying);
- ``good``: JAX behaves as expected;
- ``other``: it fails, but another way (neither good nor bad);
- ``n/a``: the release cannot run it (an API or path it lacks, or a script
  that broke before its verdict); never counted as good.

The affected range (first bad, last good, each "regressed in" / "fixed
in") goes into the finding's report (an *Affected releases* table), the
index's column, and ``reports/releases.md`` (every finding by release).

With ``--jax-repo PATH`` (a git checkout of JAX, tags ``jax-vX``), each
change between two adjacent releases is narrowed to its commit, as
ClusterFuzz narrows a revision range: the commits from the tags' merge base
along the newer tag's first-parent line are bisected, each step running the
reproducer against JAX's Python sources at that commit with the jaxlib of
the older release (or, failing that, the newer). A commit neither jaxlib
can run is skipped, as ``git bisect skip`` does.

A FINDING is a report id, a report's ``.json`` or a corpus regression file.
Exit 0 done; 2 bad usage, a bad file or release, or no environment at all.
"""
from __future__ import annotations

import concurrent.futures
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

import jax

from fuzz import atomic, compat
from fuzz.suppressions import seen_on
from fuzz.exits import EXIT_ERROR
from fuzz.triage import releases

VERDICTS = ("bad", "good", "other", "n/a")
STEP_TIMEOUT_S = 300   # the reproducer's own limit is 180 s; this adds JAX's import
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout


class BisectError(ValueError):
    pass


def add(sub) -> None:
    b = sub.add_parser("bisect", help="run findings' reproducers on every JAX release: the affected range")
    which = b.add_mutually_exclusive_group(required=True)
    which.add_argument("findings", nargs="*", default=[], metavar="FINDING",
                       help="a report id, a report .json or a corpus regression file")
    which.add_argument("--all", action="store_true", help="every regression in the corpus")
    which.add_argument("--suppressions", nargs="?", const="all", default=None, metavar="IDS",
                       help="measure which releases each known finding and unsupported entry "
                            "(comma-separated ids; default all) is seen on, and rewrite "
                            "fuzz/suppressions/seen_on.json")
    b.add_argument("--releases", default=None,
                   help="comma-separated JAX releases (default: every one since "
                        f"{releases.KNOWN[0]}: {releases.KNOWN[0]} to {releases.KNOWN[-1]})")
    b.add_argument("--cache", default=None,
                   help=f"where the environments live (default {releases.default_cache()})")
    b.add_argument("--env-tool", choices=("auto", "uv", "pip"), default="auto",
                   help="how environments are made (default auto: uv where installed)")
    b.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                   help="reproducers run at once (default: all cores)")
    b.add_argument("--setup", action="append", default=[], metavar="MODULE:FUNCTION",
                   help="call this before each reproducer, in its interpreter (a planted bug, "
                        "as the campaign's --worker-setup; MODULE found on PYTHONPATH)")
    b.add_argument("--jax-repo", default=None, metavar="PATH",
                   help="a git checkout of JAX: narrow each change between releases to its commit")
    b.add_argument("--corpus-dir", default="corpus", help="default: corpus")
    b.add_argument("--reports-dir", default="reports", help="default: reports")


# --- what one release says (runs inside the release's environment) -----------

def step(request: dict) -> dict:
    """Render ``request``'s reproducer on this interpreter's JAX and run it in
    a fresh one: ``{"verdict", "detail", "jax"}``."""
    from fuzz import paths, serialize  # heavy: kept out of CLI start-up
    from fuzz.triage import reproducer  # heavy: kept out of CLI start-up
    version = jax.__version__
    if not compat.supported(compat.jax_version()):
        return {"verdict": "n/a", "detail": f"JAX {version} is not supported", "jax": version}
    if "suppressions" in request:
        return {"seen_on": judge_suppressions(request["suppressions"], request.get("suppressing")),
                "jax": version}
    case = serialize.from_data(request["case"])
    path = request["path"]
    if why := paths.not_applicable(case, path):
        return {"verdict": "n/a", "detail": why, "jax": version}
    hang_s = request.get("timeout_s") if request["fatal"] else None
    text = reproducer.rendered(case, path, request["id"], values=request["values"],
                               jit=request["jit"], fatal=request["fatal"], watchdog_s=hang_s,
                               comparison=request.get("comparison"),
                               plain=request.get("plain", False))
    # (a little past a hang's watchdog, so that it says where it was stuck)
    ran = reproducer.check_script(text, prelude=_prelude(request),
                                  timeout=hang_s + 15 if hang_s else
                                  request.get("timeout_s") or reproducer.TIMEOUT_S)
    return {**judge(ran, request), "jax": version, "seconds": ran["seconds"]}


def _prelude(request: dict) -> str | None:
    """Python run first in the reproducer's own (isolated) interpreter: JAX's
    sources at a commit put first on its path, and the ``--setup`` hooks
    called, with the paths they are found on."""
    lines = []
    if request.get("jax_sources"):
        lines.append(f"import sys; sys.path.insert(0, {request['jax_sources']!r})")
    if request.get("setup"):
        lines += [f"import sys; sys.path[:0] = {request['sys_path']!r}", "import importlib"]
        for spec in request["setup"]:
            module, _, name = spec.partition(":")
            lines.append(f"getattr(importlib.import_module({module!r}), {name!r})()")
    return "\n".join(lines) or None


def judge(ran: dict, request: dict) -> dict:
    """A verdict from what `reproducer.check_script` saw."""
    from fuzz.triage import reproducer  # heavy: kept out of CLI start-up
    died = reproducer.died(ran)
    if request["fatal"]:
        return {"verdict": "bad" if died else "good",
                "detail": "the interpreter died or hung" if died else "it ran to its end"}
    if ran["status"] == "timeout":
        return {"verdict": "other", "detail": "it hung (the finding does not)"}
    if ran["status"] == "broken":
        last = [line for line in ran["output"].strip().splitlines() if line.strip()]
        return {"verdict": "n/a", "detail": "the script broke before its verdict: "
                + (last[-1][:200] if last else "no output")}
    if ran["status"] == "does not reproduce":
        return {"verdict": "good", "detail": "JAX behaves as expected"}
    if ran["error"] == request["wanted"] and (
            request.get("cause") is None or _cause(ran["output"]) == request["cause"]):
        return {"verdict": "bad", "detail": _said(ran)}
    how = f"raised {ran['error']}" if ran["error"] else "wrong results, no error"
    return {"verdict": "other", "detail": f"fails otherwise ({how}): {_said(ran)}"}


def _cause(text: str) -> str | None:
    """The error a failed callback raised (JAX wraps every one in the same
    JaxRuntimeError), as its message names it; None if none."""
    found = re.search(r"error calling callback: (\w+)", text or "")
    return found[1] if found else None


def _said(ran: dict) -> str:
    lines = [line for line in ran["output"].splitlines() if line.startswith("BUG:")]
    return releases.steady(lines[0][5:] if lines else ran["output"].strip()[:200])[:200]


def _step_main() -> int:
    print(json.dumps(step(json.load(sys.stdin))))
    return 0


# --- what a finding is -------------------------------------------------------

def request_of(finding: dict) -> dict:
    """What a release needs to render and judge ``finding``'s reproducer
    (a report record)."""
    repro = finding.get("reproducer") or {}
    if not repro.get("path"):
        raise BisectError(f"{finding['id']}: its report has no reproducer to run")
    from fuzz.triage import findings, reproducer  # heavy: kept out of CLI start-up
    how = reproducer.rendering(repro)
    fatal = repro.get("fatal", finding.get("symptom") in findings.CRASH_SYMPTOMS)
    # Bad is failing as the verified reproducer did: with the error it saw
    # (None: wrong results, no error) and, for a failed callback, the error
    # the callback raised.
    return {"id": finding["id"], "case": finding["case"], "path": repro["path"],
            "values": how["values"], "jit": how["jit"], "fatal": fatal,
            "wanted": repro.get("error"), "cause": _cause(finding.get("message")),
            "timeout_s": repro.get("timeout_s"),
            "comparison": repro.get("comparison"), "plain": how.get("plain", False)}


def recheck(record: dict, timeout_s: float | None = None) -> dict:
    """A filed finding (a report record) judged on this JAX as a release's
    step judges it: its reproducer rendered here and run in a fresh
    interpreter, so that a crash or a hang kills that one, not the caller.
    ``timeout_s`` shortens a hang's wait."""
    request = request_of(record)
    if timeout_s is not None:
        request["timeout_s"] = min(timeout_s, request["timeout_s"] or timeout_s)
    return step(request)


def resolve(names, corpus_dir: str, reports_dir: str, every: bool) -> list[dict]:
    """The report records of the findings named (ids, report files or
    regression files), or of every regression. A regression without a
    report is filed first, on this JAX, so that it has a verified reproducer."""
    from fuzz.triage import corpus, reports  # heavy: kept out of CLI start-up
    if every:
        names = corpus.files(corpus_dir, "regression")
        if not names:
            raise BisectError(f"{corpus_dir}: no regressions to bisect")
    found = []
    for name in names:
        if name.endswith(".json") and os.path.exists(name):
            data = _read(name)
            if data.get("kind") == "regression":
                record = reports.load(reports_dir, data.get("id", ""))
                found.append(record if record is not None else _filed(name, corpus_dir, reports_dir))
            else:
                found.append(data)
            continue
        record = reports.load(reports_dir, name)
        if record is None:
            raise BisectError(f"{name}: no such finding (not a file, nor a report id in {reports_dir})")
        found.append(record)
    for record in found:
        if not isinstance(record, dict) or "id" not in record or "case" not in record:
            raise BisectError("a finding record without id or case")
    return found


def _read(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise BisectError(f"{path}: unreadable ({e})") from None
    if not isinstance(data, dict):
        raise BisectError(f"{path}: not a finding record or corpus file")
    return data


def _filed(path: str, corpus_dir: str, reports_dir: str) -> dict:
    from fuzz import oracles  # heavy: kept out of CLI start-up
    from fuzz.triage import corpus, filing, findings, reports  # heavy: kept out of CLI start-up
    entry = corpus.load(path)
    failures = [f for f in oracles.check(entry.case).failures
                if findings.signature(f) == entry.signature]
    if not failures:
        raise BisectError(f"{path}: does not fail with its signature on this JAX, so it has "
                          "no verified reproducer to bisect with (discharge-fuzz report --all)")
    finding, _ = filing.record(failures[0], corpus_dir=corpus_dir, reports_dir=reports_dir)
    return reports.load(reports_dir, finding.id)


# --- many releases -------------------------------------------------------------

def run_step(env: releases.Environment, request: dict, timeout=STEP_TIMEOUT_S) -> dict:
    where = [*filter(None, [request.get("jax_sources")]), *(request.get("sys_path") or [ROOT])]
    child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                 "PYTHONPATH": os.pathsep.join(where),
                 "HOME": os.environ.get("HOME", "/tmp"), "LANG": "C.UTF-8"}
    with tempfile.TemporaryDirectory(prefix="discharge-fuzz-bisect-") as tmp:
        try:
            proc = subprocess.run([env.python, "-m", "fuzz.triage.bisect", "--step"], cwd=tmp,
                                  env=child_env, input=json.dumps(request), text=True,
                                  capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"verdict": "bad" if request.get("fatal") else "other",
                    "detail": f"no answer in {timeout} s"}
    lines = proc.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"verdict": "n/a", "detail": f"the fuzzer did not run on it: {last[:200]}",
                "died": last[:200]}


def affected(verdicts: dict[str, dict]) -> dict:
    """The range of releases a finding affects, from ``{release: verdict}``
    (any order): first bad, last good before it, and each change."""
    order = releases.ordered(verdicts)
    tested = [(r, verdicts[r]["verdict"]) for r in order if verdicts[r]["verdict"] in ("bad", "good")]
    bad = [r for r, v in tested if v == "bad"]
    changes, steps = [], []
    for (r0, v0), (r1, v1) in zip(tested, tested[1:]):
        if v0 != v1:
            gap = order.index(r1) - order.index(r0) > 1
            what = "regressed" if v1 == "bad" else "fixed"
            changes.append(f"{what} in {r1}" + (f" (after {r0}; the releases between could not tell)"
                                                if gap else ""))
            steps.append((r0, r1))
    first_bad = bad[0] if bad else None
    last_good = next((r for r, v in reversed(tested) if v == "good"
                      and first_bad and compat.parse_release(r) < compat.parse_release(first_bad)), None)
    if not tested:
        text = "no release could tell (all n/a or failing otherwise)"
    elif not bad:
        text = f"not reproduced on any tested release ({tested[0][0]} to {tested[-1][0]})"
    elif not changes:
        text = f"bad on every tested release ({tested[0][0]} to {tested[-1][0]})"
    else:
        text = "; ".join(changes) + ("; still bad in " + tested[-1][0] if tested[-1][1] == "bad"
                                     else "")
    # Newer releases that fail the reproducer another way: "still bad" in
    # the newest that could tell is not yet the newest release's verdict.
    newer = order[order.index(tested[-1][0]) + 1:] if tested else []
    if otherwise := [r for r in newer if verdicts[r]["verdict"] == "other"]:
        text += (f"; {otherwise[0]} fails otherwise" if len(otherwise) == 1 else
                 f"; {otherwise[0]} to {otherwise[-1]} fail otherwise")
    return {"first_bad": first_bad, "last_good": last_good, "changes": changes,
            "steps": steps, "newest_tested": tested[-1][0] if tested else None, "summary": text}


def from_seen_on(entry_id: str, table: dict | None = None) -> dict | None:
    """What ``bisect --suppressions`` measured of known entry ``entry_id``'s
    example on each release (``table``, default fuzz/suppressions/seen_on.json),
    in `bisect`'s form; None where it was not measured."""
    measured = (table or seen_on.TABLE).get("known", {}).get(entry_id)
    if not measured:
        return None
    verdicts = {r: {"verdict": v.split(":")[0], "detail": v.partition(": ")[2]}
                for r, v in measured.items()}
    return {"releases": {r: verdicts[r] for r in releases.ordered(verdicts)},
            "affected": affected(verdicts),
            "source": "`discharge-fuzz bisect --suppressions`: the known entry's example "
                      "run on each release"}


# --- down to the commit ----------------------------------------------------------

def _git(repo: str, *args: str) -> str:
    proc = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        raise BisectError(f"--jax-repo {repo}: git {' '.join(args)}: {why}")
    return proc.stdout.strip()


def commit_range(repo: str, older: str, newer: str) -> list[str]:
    """The commits between two releases, oldest first: the merge base of
    their tags (``jax-vX``; a release tag sits on its own branch), then the
    newer tag's first-parent line after it, ending at the tag."""
    a, b = (_git(repo, "rev-parse", f"jax-v{r}^{{commit}}") for r in (older, newer))
    base = _git(repo, "merge-base", a, b)
    return [base, *_git(repo, "rev-list", "--first-parent", "--reverse", f"{base}..{b}").split()]


def sources(repo: str, commit: str, into: str) -> str:
    """A directory holding JAX's Python package (``jax/``) as of ``commit``."""
    path = os.path.join(into, commit[:12])
    if not os.path.isdir(path):
        archive = subprocess.run(["git", "-C", repo, "archive", commit, "jax"],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(path, filter="data")
    return path


def bisect_commits(repo: str, request: dict, older: str, newer: str, envs: dict,
                   say=print) -> dict:
    """The first commit between releases ``older`` and ``newer`` whose
    verdict is ``newer``'s: ``{"first", "last_before", "subject", "tested",
    "skipped", "left"}`` (``left``: the commits it may still be, when the
    ones between could not be run)."""
    commits = commit_range(repo, older, newer)
    jaxlibs = [envs[r] for r in (older, newer) if r in envs]
    with tempfile.TemporaryDirectory(prefix="discharge-fuzz-jax-src-") as tmp:
        def verdict(i):
            src = sources(repo, commits[i], tmp)
            for env in jaxlibs:
                v = run_step(env, {**request, "jax_sources": src})["verdict"]
                if v in ("bad", "good"):
                    say(f"{v:<5} {commits[i][:12]} ({i}/{len(commits) - 1}, jaxlib {env.release})")
                    return v
            say(f"skip  {commits[i][:12]} ({i}/{len(commits) - 1}: neither jaxlib runs it)")
            return None
        before, after = verdict(0), verdict(len(commits) - 1)
        if before is None or after is None or before == after:
            raise BisectError(f"{request['id']}: the tags of {older} and {newer} (their merge base "
                              f"and the newer tag) give {before} and {after}, not the releases' "
                              "change: nothing to bisect")
        lo, hi, tested, skipped = narrowed(0, len(commits) - 1, lambda i: (
            None if (v := verdict(i)) is None else v == before))
    first = commits[hi]
    return {"first": first, "last_before": commits[lo],
            "subject": _git(repo, "log", "-1", "--format=%s", first),
            "tested": tested + 2, "skipped": len(skipped), "left": commits[lo + 1:hi + 1]}


def narrowed(lo: int, hi: int, as_before, max_skipped: int | None = None):
    """Bisection of the commits ``lo..hi`` (by number; ``lo`` on the old
    side, ``hi`` on the new): ``as_before(i)`` says whether commit ``i``
    behaves as ``lo`` does (True), as ``hi`` does (False), or cannot be
    judged (None: skipped, its neighbours nearest the middle tried instead).
    ``(lo, hi, tested, skipped)``: the last old and first new commit found
    (adjacent unless every commit between is skipped, or ``max_skipped``
    were), how many were judged, and which were skipped."""
    tested, skipped = 0, set()
    while hi - lo > 1 and (max_skipped is None or len(skipped) < max_skipped):
        mid = (lo + hi) // 2
        untried = sorted(set(range(lo + 1, hi)) - skipped, key=lambda i: (abs(i - mid), i))
        if not untried:
            break
        i = untried[0]
        tested += 1
        side = as_before(i)
        if side is None:
            skipped.add(i)
        elif side:
            lo = i
        else:
            hi = i
    return lo, hi, tested, skipped


def environments(wanted: list[str], cache, tool, say) -> tuple[dict, dict]:
    """``({release: environment}, {release: why none})``; BisectError if none."""
    envs, broken = {}, {}
    for release in wanted:
        start = time.perf_counter()
        try:
            envs[release] = releases.environment(release, cache, tool)
            say(f"env  {release:<9} ready ({time.perf_counter() - start:.1f} s)")
        except releases.ReleaseError as e:
            broken[release] = str(e)
            say(f"env  {release:<9} n/a: {e}")
    if not envs:
        raise BisectError("no release environment could be made: " + "; ".join(broken.values()))
    return envs, broken


def bisect(records: list[dict], wanted: list[str], *, cache=None, tool="auto", jobs=2,
           setup=(), jax_repo=None, say=print) -> dict[str, dict]:
    """``{finding id: {"releases": {release: verdict}, "affected": ...}}``."""
    envs, broken = environments(wanted, cache, tool, say)
    sys_path = [ROOT, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    requests = [{**request_of(r), "setup": list(setup), "sys_path": [os.path.abspath(p) for p in sys_path]}
                for r in records]
    results = {q["id"]: {r: {"verdict": "n/a", "detail": why} for r, why in broken.items()}
               for q in requests}
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(run_step, envs[r], q): (q["id"], r) for q in requests for r in envs}
        for future in concurrent.futures.as_completed(futures):
            fid, release = futures[future]
            results[fid][release] = future.result()
            say(f"{results[fid][release]['verdict']:<5} {release:<9} {fid}")
    done = {fid: {"releases": {r: v[r] for r in releases.ordered(v)}, "affected": affected(v)}
            for fid, v in results.items()}
    for q in requests if jax_repo else ():
        found = done[q["id"]]["affected"]
        found["commits"] = []
        for older, newer in found["steps"]:
            try:
                c = bisect_commits(jax_repo, q, older, newer, envs, say)
            except BisectError as e:
                found["commits"].append({"between": [older, newer], "error": str(e)})
                continue
            found["commits"].append({"between": [older, newer], **c})
            found["summary"] += _narrowed_to(found["commits"][-1])
    return done


def _narrowed_to(c: dict) -> str:
    """What the summary says of a change `bisect_commits` narrowed."""
    older, newer = c["between"]
    return (f"; between {older} and {newer}: commit {c['first'][:12]} ({c['subject'][:80]})"
            if len(c["left"]) == 1 else
            f"; between {older} and {newer}: one of {len(c['left'])} commits "
            f"{c['last_before'][:12]}..{c['first'][:12]} (the others could not be run)")


def merged(before: dict | None, now: dict) -> dict:
    """``now`` over the releases a finding's earlier bisection (``before``)
    measured and ``now`` did not, so ``--releases NEW`` adds a release to its
    table; each fixing commit found before is kept while its change stands.
    A table measured another way (``source``: a known finding's example) is
    replaced, not mixed."""
    if not before or before.get("source"):
        return now
    verdicts = {**before["releases"], **now["releases"]}
    found = affected(verdicts)
    redone = [tuple(c["between"]) for c in now["affected"].get("commits", [])]
    commits = [c for c in before["affected"].get("commits", [])
               if tuple(c["between"]) not in redone
               and tuple(c["between"]) in map(tuple, found["steps"])] + now["affected"].get("commits", [])
    if commits:
        found["commits"] = commits
        found["summary"] += "".join(_narrowed_to(c) for c in commits if "error" not in c)
    return {"releases": {r: verdicts[r] for r in releases.ordered(verdicts)}, "affected": found}


# --- what one release says of the suppressions (runs inside its environment) --

def judge_suppressions(ids=None, suppressing=None) -> dict[str, dict[str, str]]:
    """``{kind: {id: verdict}}`` for the entries named (default: all) on
    this interpreter's JAX, each judged as its test judges it: with the
    entries ``suppressing`` (ids; default: all) and itself suppressing.

    Which entries suppress decides what the others' examples show (a failure
    is pinned to the first entry it matches; a known one lets the tiers go
    on), so `measure_suppressions` starts from all and repeats with the bad
    ones until the verdicts stop changing."""
    from fuzz.suppressions import known_findings, unsupported  # heavy: kept out of CLI start-up
    found = {kind: {} for kind in seen_on.KINDS}
    running = known_findings.KNOWN, unsupported.CURRENT
    try:
        for kind, entries, judged in (("known", known_findings.ALL_KNOWN, _judge_known),
                                      ("unsupported", unsupported.TABLE, _judge_refused)):
            for entry in entries:
                if ids is not None and entry.id not in ids:
                    continue
                known_findings.KNOWN, unsupported.CURRENT = (tuple(
                    e for e in table if suppressing is None or e.id in suppressing or e is entry)
                    for table in (known_findings.ALL_KNOWN, unsupported.TABLE))
                found[kind][entry.id] = judged(entry)
    finally:
        known_findings.KNOWN, unsupported.CURRENT = running
    return found


def _first(report) -> str:
    f = report.failures[0]
    return f"{f.oracle} on {f.path}: {releases.steady(str(f.message).splitlines()[0])[:160]}"


def _checked(case):
    """(the report of ``case``, None), or (None, n/a and why): no path of it
    could run here, or the fuzzer itself broke on this release."""
    from fuzz import oracles  # heavy: kept out of CLI start-up
    try:
        report = oracles.check(case)
    except Exception as e:   # noqa: BLE001 - said, not raised: one entry's verdict
        first = (str(e).splitlines() or [""])[0]
        return None, f"n/a: the fuzzer raised {type(e).__name__}: {releases.steady(first)[:160]}"
    if case.paths and set(case.paths) <= set(report.skipped):
        return None, "n/a: " + next(iter(report.skipped.values()))
    return report, None


def _judge_known(k) -> str:
    from fuzz.suppressions import known_findings  # heavy: kept out of CLI start-up
    report, why = _checked(k.example)
    if why:
        return why
    firsts = [known_findings.match(f, report.failures) for f in report.failures]
    if k in firsts:
        return "bad"
    if not report.failures:
        # good only where an oracle that shows the bug ran on the example
        lacking = [report.not_applied.get(oracle, "") for oracle, _ in k.symptoms]
        if all(why.startswith(f"JAX {jax.__version__} ") for why in lacking):
            return f"n/a: {lacking[0]}"
        return "good"
    other = next((m.id for m in firsts if m is not None), None)
    return "other: " + (f"matches {other} first" if other else _first(report))


def _judge_refused(entry) -> str:
    report, why = _checked(entry.example)
    if why:
        return why
    refused = [u[1] for u in report.unsupported if u[0] == entry.path]
    if not report.failures and refused == [entry]:
        return "bad"
    if not report.failures and not refused:
        return "good"
    if report.failures:
        known = report.failures[0].known
        return f"other: matches {known} first" if known else "other: " + _first(report)
    return "other: refused as " + ", ".join(e.id for e in refused)


def save_seen_on(table: dict, path: str = seen_on.FILE) -> None:
    """Write ``table`` (`seen_on.load`'s shape) as ``seen_on.json``: its
    entries by id, each one's releases oldest first."""
    text = json.dumps({kind: {i: dict(sorted(v.items(), key=lambda kv: compat.parse_release(kv[0])))
                              for i, v in sorted(table[kind].items())} for kind in seen_on.KINDS},
                      indent=1)
    atomic.write_text(path, text + "\n")


# --- the suppressions on every release ------------------------------------------

SUPPRESSION_S = 15   # one entry's example, up to three times over (about 1 s each)


def measure_suppressions(ids, wanted: list[str], *, cache=None, tool="auto", jobs=2,
                         say=print) -> dict:
    """``{kind: {id: {release: verdict}}}`` for the entries ``ids`` (None:
    all) on each release in ``wanted``: `judge_suppressions` run inside each
    release's environment. A run that dies is run again in halves, so one
    example cannot cost the others their verdicts."""
    envs, broken = environments(wanted, cache, tool, say)
    every = _suppression_ids()
    ids = sorted(every) if ids is None else ids
    found = {kind: {i: {} for i in ids if every[i] == kind} for kind in seen_on.KINDS}
    for release, why in broken.items():
        for i in ids:
            found[every[i]][i][release] = f"n/a: {why}"

    def judged(release, batch, suppressing):
        """The verdicts of ``batch`` on ``release``; a run that dies is split
        in halves, down to the entry whose example kills the process (that
        example fails, though not as its entry says: other)."""
        answer = run_step(envs[release], {"suppressions": batch, "suppressing": suppressing},
                          SUPPRESSION_S * len(batch) + STEP_TIMEOUT_S)
        if "seen_on" in answer:
            return {i: v for kind in seen_on.KINDS for i, v in answer["seen_on"][kind].items()}
        if len(batch) == 1:
            why = answer.get("died") and f"the process died: {answer['died']}"
            return {batch[0]: f"other: {why or answer['detail']}"}
        say(f"     {release:<9} died on {len(batch)} entries: again, in halves")
        half = len(batch) // 2
        return {**judged(release, batch[:half], suppressing),
                **judged(release, batch[half:], suppressing)}

    def one_release(release):
        """Every entry judged with the bad ones suppressing (as the suite runs
        them), from all, until that set stops changing; the entries not
        measured now suppress where the table says they are bad."""
        others = sorted(i for i in every if i not in ids and seen_on.TABLE[every[i]].get(
            i, {}).get(release, "bad") == "bad")
        verdicts, suppressing = {}, sorted([*others, *ids])
        for _ in range(4):
            alive = [i for i in ids if "process died" not in verdicts.get(i, "")]
            verdicts.update(judged(release, alive, suppressing))
            now = sorted([*others, *(i for i, v in verdicts.items() if v == "bad")])
            if now == suppressing:
                break
            suppressing = now
        return verdicts

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        futures = {pool.submit(one_release, r): r for r in envs}
        for future in concurrent.futures.as_completed(futures):
            release, seen = futures[future], future.result()
            for i, v in seen.items():
                found[every[i]][i][release] = v
            bad = sum(v == "bad" for v in seen.values())
            say(f"done {release:<9} {bad} of {len(ids)} entries seen")
    return found


def _suppression_ids() -> dict[str, str]:
    """Every suppression's id -> its kind."""
    from fuzz.suppressions import known_findings, unsupported  # heavy: kept out of CLI start-up
    return {**{k.id: "known" for k in known_findings.ALL_KNOWN},
            **{e.id: "unsupported" for e in unsupported.TABLE}}


def suppressions_main(args, wanted: list[str]) -> int:
    """``bisect --suppressions``: measure, say what changed, rewrite the table."""
    every = _suppression_ids()
    ids = None if args.suppressions == "all" else [i.strip() for i in args.suppressions.split(",")]
    for i in ids or ():
        if i not in every:
            raise BisectError(f"--suppressions: no known finding or unsupported entry {i!r}")
    found = measure_suppressions(ids, wanted, cache=args.cache, tool=args.env_tool,
                                 jobs=args.jobs)
    table = seen_on.load()
    for kind in seen_on.KINDS:
        for i, seen in sorted(found[kind].items()):
            before = table[kind].setdefault(i, {})
            changed = [f"{r}: {before.get(r, 'unmeasured')} -> {v}" for r, v in seen.items()
                       if before.get(r) != v]
            before.update(seen)
            span = affected({r: {"verdict": v.split(":")[0]} for r, v in before.items()})
            print(f"{i}: {span['summary']}")
            for line in changed:
                print(f"    {line}")
    save_seen_on(table)
    print(f"wrote {seen_on.FILE}")
    requote(args.reports_dir, table)
    return 0


def requote(reports_dir, table: dict) -> None:
    """Rewrite the Affected releases of each report that quotes ``table``
    (a known finding's, `from_seen_on`) to say what it says now."""
    from fuzz.triage import reports  # heavy: kept out of CLI start-up
    for record in reports.records(reports_dir):
        if (record.get("releases") or {}).get("source") and record.get("known") and \
                (measured := from_seen_on(record["known"], table)):
            reports.add_releases(reports_dir, record["id"], measured)
    reports.write_release_matrix(reports_dir)


def main(args) -> int:
    from fuzz.triage import corpus, reports  # heavy: kept out of CLI start-up
    try:
        wanted = releases.ordered(args.releases.split(",") if args.releases else releases.KNOWN)
        if args.jobs < 1:
            raise BisectError("--jobs must be >= 1")
        if args.suppressions:
            if args.setup or args.jax_repo:
                raise BisectError("--suppressions runs the entries' own examples: "
                                  "it takes no --setup or --jax-repo")
            return suppressions_main(args, wanted)
        records = resolve(args.findings, args.corpus_dir, args.reports_dir, args.all)
        for spec in args.setup:
            if ":" not in spec.strip(":"):
                raise BisectError(f"--setup {spec!r}: expected module:function")
        if args.jax_repo and not os.path.isdir(os.path.join(args.jax_repo, ".git")) and \
                not os.path.isfile(os.path.join(args.jax_repo, "HEAD")):
            raise BisectError(f"--jax-repo {args.jax_repo}: not a git checkout")
        results = bisect(records, wanted, cache=args.cache, tool=args.env_tool, jobs=args.jobs,
                         setup=args.setup, jax_repo=args.jax_repo)
    except (BisectError, releases.ReleaseError, corpus.CorpusError, reports.ReportError) as e:
        print(f"discharge-fuzz: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    for record in records:
        result = merged(record.get("releases"), results[record["id"]])
        print(f"{record['id']}: {result['affected']['summary']}")
        if os.path.exists(os.path.join(args.reports_dir, record["id"] + ".json")):
            reports.add_releases(args.reports_dir, record["id"], result)
    reports.write_release_matrix(args.reports_dir)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--step"]:
        sys.exit(_step_main())
    sys.exit("usage: discharge-fuzz bisect ... (python -m fuzz.triage.bisect --step is its worker)")

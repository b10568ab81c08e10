"""The triage subcommands of ``discharge-fuzz``: replay, minimize, report.

- ``replay FILE...``: seeds must pass, regressions must still fail with their
  recorded signature. Exit 0 when every file behaves as recorded, 1 when one
  does not (a seed fails, or a regression is fixed / fails otherwise).
- ``minimize FILE``: the smallest case that fails like FILE's case. Exit 0,
  or 1 when the case does not fail.
- ``report FILE | --all | --known [IDS]``: file FILE's failures as findings;
  or re-check every regression on this JAX and rewrite all reports; or file
  every known finding live on this JAX (or those named). Exit 0, or 1 when
  FILE does not fail / (--all) a regression is fixed in this JAX.
Exit 2 for a bad file or bad usage, with one line on stderr.
"""
from __future__ import annotations

import sys

from fuzz import atomic
from fuzz.exits import EXIT_CHANGED, EXIT_ERROR, EXIT_OK

COMMANDS = ("replay", "minimize", "report")


def add_commands(sub) -> None:
    r = sub.add_parser("replay", help="replay corpus files: seeds pass, regressions still fail")
    r.add_argument("files", nargs="+", metavar="FILE", help="corpus JSON files (seeds, regressions or bare cases)")
    m = sub.add_parser("minimize", help="reduce a failing case to the smallest that fails the same way")
    m.add_argument("file", metavar="FILE", help="a corpus JSON file or bare case")
    m.add_argument("-o", "--output", metavar="OUT", help="write the minimized case (JSON) here")
    m.add_argument("--max-attempts", type=int, default=300, help="candidate cases to try (default 300)")
    p = sub.add_parser("report", help="file failures as findings: regression + verified reproducer + report")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("file", nargs="?", metavar="FILE", help="a corpus JSON file or bare case")
    which.add_argument("--all", action="store_true",
                       help="re-check every regression on this JAX; rewrite all reports and the index")
    which.add_argument("--known", nargs="?", const="", metavar="IDS",
                       help="file the example of every known finding live on this JAX "
                            "(fuzz/suppressions/known_findings.py), or of those named "
                            "(comma-separated ids)")
    p.add_argument("--corpus-dir", default="corpus", help="default: corpus")
    p.add_argument("--reports-dir", default="reports", help="default: reports")
    p.add_argument("--no-minimize", action="store_true", help="file the case as it is")
    p.add_argument("--no-verify", action="store_true", help="do not run the reproducer in a fresh interpreter")


def main(args) -> int:
    from fuzz.triage import corpus  # heavy: kept out of CLI start-up
    try:
        return {"replay": _replay, "minimize": _minimize, "report": _report}[args.command](args)
    except corpus.CorpusError as e:
        print(f"discharge-fuzz: error: {e}", file=sys.stderr)
        return EXIT_ERROR


def _replay(args) -> int:
    from fuzz import oracles  # heavy: kept out of CLI start-up
    from fuzz.triage import corpus, findings  # heavy: kept out of CLI start-up
    entries = [corpus.load(f) for f in args.files]  # all checked before anything runs
    changed = False
    for entry in entries:
        if entry.meta.get("oracle") == "crash":   # it would kill or hang this process
            print(f"skipped  {entry.path}: a crash regression ({entry.note}); "
                  "`discharge-fuzz report --all` re-checks it in a fresh interpreter")
            continue
        if entry.kind == "regression":
            now = oracles.check(entry.case).failures
            if any(findings.signature(f) == entry.signature for f in now):
                print(f"ok       {entry.path}: still fails as recorded")
                continue
            changed = True
            print(f"CHANGED  {entry.path}: no longer fails with its signature"
                  + (f"; now: {now[0]}" if now else " (fixed in this JAX?)"))
            continue
        unknown = [f for f in oracles.check(entry.case).failures if f.known is None]
        if unknown:
            changed = True
            print(f"FAILS    {entry.path}: {str(unknown[0]).splitlines()[0]}")
        else:
            print(f"ok       {entry.path}: passes")
    return EXIT_CHANGED if changed else EXIT_OK


def _target(entry):
    """The failure of ``entry``'s case to work on: the recorded signature for
    a regression, else the first unknown failure (or the first at all)."""
    from fuzz import oracles  # heavy: kept out of CLI start-up
    from fuzz.suppressions import known_findings  # heavy: kept out of CLI start-up
    from fuzz.triage import findings  # heavy: kept out of CLI start-up
    report = oracles.check(entry.case)
    if entry.signature is not None:
        return next((f for f in report.failures if findings.signature(f) == entry.signature), None)
    unknown = [f for f in report.failures if not known_findings.match(f, report.failures)]
    return (unknown or report.failures or [None])[0]


def _minimize(args) -> int:
    from fuzz import emit, serialize  # heavy: kept out of CLI start-up
    from fuzz.triage import corpus, findings, minimize  # heavy: kept out of CLI start-up
    entry = corpus.load(args.file)
    failure = _target(entry)
    if failure is None:
        print(f"{args.file}: the case does not fail; nothing to minimize")
        return EXIT_CHANGED
    sig = findings.signature(failure)
    result = minimize.minimize(entry.case, findings.same_failure(sig),
                               max_attempts=max(args.max_attempts, 1))
    print(f"signature: {sig}")
    print(f"minimized in {result.seconds:.1f}s, {result.attempts} attempts: "
          f"{len(entry.case.body)} -> {len(result.case.body)} statements")
    print(emit.kernel_source(result.case), end="")
    text = serialize.dumps(result.case) + "\n"
    if args.output:
        atomic.write_text(args.output, text)
        print(f"written to {args.output}")
    else:
        print(text, end="")
    return EXIT_OK


def _options(args) -> dict:
    return {"corpus_dir": args.corpus_dir, "reports_dir": args.reports_dir,
            "minimize": not args.no_minimize, "verify": not args.no_verify}


def _say(finding, new: bool) -> None:
    repro = finding.reproducer or {}
    print(f"{'NEW ' if new else 'seen'} {finding.id}: {finding.symptom} at {finding.stage}; "
          f"{finding.kernel_lines} kernel line(s); minimized in "
          f"{finding.minimized.get('seconds', 0)}s; reproducer "
          f"({repro.get('path')}): {repro.get('status')}; hits {finding.hits}")


def _report(args) -> int:
    if args.all:
        return _report_all(args)
    if args.known is not None:
        return _report_known(args)
    from fuzz import oracles  # heavy: kept out of CLI start-up
    from fuzz.triage import corpus, filing, findings  # heavy: kept out of CLI start-up
    entry = corpus.load(args.file)
    report = oracles.check(entry.case)
    distinct = {findings.signature(f): f for f in reversed(report.failures)}
    if not distinct:
        print(f"{args.file}: the case does not fail; nothing to report")
        return EXIT_CHANGED
    for failure in distinct.values():
        _say(*filing.record(failure, **_options(args)))
    return EXIT_OK


def _report_known(args) -> int:
    from fuzz import oracles  # heavy: kept out of CLI start-up
    from fuzz.suppressions import known_findings  # heavy: kept out of CLI start-up
    from fuzz.triage import bisect, filing, reports  # heavy: kept out of CLI start-up
    # An entry whose root cause another shares (`same_as`) after that one,
    # so that it is counted in that one's report.
    wanted = set(filter(None, args.known.split(",")))
    if unknown := wanted - {k.id for k in known_findings.KNOWN}:
        print(f"discharge-fuzz: error: not a known finding live on this JAX: "
              f"{', '.join(sorted(unknown))}", file=sys.stderr)
        return EXIT_ERROR
    for k in sorted(known_findings.KNOWN, key=lambda k: bool(k.same_as)):
        if wanted and k.id not in wanted:
            continue
        report = oracles.check(k.example)
        hits = [f for f in report.failures if known_findings.match(f, report.failures) is k]
        if not hits:
            print(f"-    {k.id}: its example does not fail on this JAX"
                  + (" (reported unsupported by a path)" if report.unsupported else ""))
            continue
        # The hit a maintainer can see through public API first: one not
        # from an internal-invariant oracle, then a symptom (matched without
        # the report, no consequence matches) before a consequence, then on
        # the most public path.
        best = min(hits, key=lambda f: (f.inside_jax, known_findings.match(f) is not k,
                                        filing.public_first(f)))
        finding, new = filing.record(best, **_options(args))
        if new and not finding.releases and (measured := bisect.from_seen_on(k.id)):
            reports.add_releases(args.reports_dir, finding.id, measured)
        _say(finding, new)
    reports.write_index(args.reports_dir)
    reports.write_release_matrix(args.reports_dir)
    return EXIT_OK


def _report_all(args) -> int:
    """Re-check each regression on this JAX, then rewrite its report."""
    from fuzz import oracles  # heavy: kept out of CLI start-up
    from fuzz.triage import corpus, filing, findings, reports, reproducer  # heavy: kept out of CLI start-up
    fixed = False
    for path in corpus.files(args.corpus_dir, "regression"):
        entry = corpus.load(path)
        data = reports.load(args.reports_dir, entry.meta["id"])
        crash = entry.meta.get("oracle") == "crash"
        if crash:
            if (still := _still_dies(args, entry, data)) is None:
                continue
        else:
            now = [f for f in oracles.check(entry.case).failures
                   if findings.signature(f) == entry.signature]
            if data is None:  # a regression without a report: file it afresh
                if now:
                    _say(*filing.record(now[0], **_options(args)))
                continue
            still = bool(now)
        finding = findings.Finding.from_record(data)
        if still:
            finding.status, finding.last_seen = "still failing", findings.now()
            finding.versions = findings.versions()
            if crash:   # it died in a fresh interpreter: verified, as filing would have
                finding.reproducer["status"] = "reproduces"
            else:   # labelled as this JAX shows it (records filed before a label was mended)
                finding.symptom, finding.stage = now[0].symptom_of(), findings.stage_of(now[0])
                if not args.no_verify and finding.reproducer.get("script"):
                    # Chosen and rendered again on this JAX: a path renders
                    # only what the release it runs on needs (the abstract
                    # path's discharge call), and the plainest form that
                    # shows the bug is taken (`reproducer.best`).
                    finding.reproducer.update(reproducer.best(
                        entry.case, finding.paths, now[0], finding_id=finding.id))
        else:
            fixed, finding.status = True, "fixed in this JAX"
        reports.write(args.reports_dir, finding)
        print(f"{finding.status:<17} {finding.id}")
    reports.write_index(args.reports_dir)
    return EXIT_CHANGED if fixed else EXIT_OK


def _still_dies(args, entry, data) -> bool | None:
    """Whether a crash or hang regression still kills its reproducer, run in
    a fresh interpreter (it would kill this one); None where that cannot be
    told here (no report to render it from, n/a on this JAX)."""
    from fuzz.triage import bisect  # heavy: kept out of CLI start-up
    if data is None:
        print(f"skipped  {entry.meta['id']}: a crash regression without its report in "
              f"{args.reports_dir}: nothing to re-check it with")
        return None
    ran = bisect.recheck(data)
    if ran["verdict"] not in ("bad", "good"):   # n/a here, or it failed another way
        print(f"{ran['verdict']:<17} {entry.meta['id']}: {ran['detail']}")
        return None
    return ran["verdict"] == "bad"

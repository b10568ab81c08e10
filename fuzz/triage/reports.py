"""Reports: per finding ``reports/<id>.md`` (shaped like JAX's bug template),
``reports/<id>.json`` (the record machines and `filing.record` read back),
``reports/<id>.py`` (the reproducer), and the index ``reports/index.md``.

Everything here takes a `findings.Finding` (or its JSON record) and writes
text; nothing reruns JAX.
"""
from __future__ import annotations

import json
import os
import re

from fuzz import atomic, compat, ir, oracles, paths
from fuzz.suppressions import known_findings
from fuzz.severity import USABILITY
from fuzz.triage import findings, isolate, jax_source, releases, reproducer, snippet

INDEX = "index.md"
RELEASES = "releases.md"
UPSTREAM = "upstream.md"


class ReportError(ValueError):
    pass


def load(reports_dir, finding_id: str) -> dict | None:
    """The JSON record of ``finding_id``, or None if there is none yet."""
    path = os.path.join(os.fspath(reports_dir), finding_id + ".json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise ReportError(f"{path}: unreadable report record ({e})") from None


def records(reports_dir) -> list[dict]:
    directory = os.fspath(reports_dir)
    if not os.path.isdir(directory):
        return []
    return [load(directory, n[:-5]) for n in sorted(os.listdir(directory))
            if n.endswith(".json")]


def summary(finding) -> str:
    """One paragraph in plain words: the oracle's own (its class's
    ``summary``), with where and on what it shows."""
    # (a dead worker's path is "?" where its stack did not say)
    shown = [_shown(p) for p in sorted(finding.paths, key=lambda p: p in paths.NAMES
                                       and paths.fact(p, "INTERNAL"))]
    where = (", ".join(shown[:-1]) + " and " if len(shown) > 1 else "") + (shown[-1] if shown else "?")
    versions = finding.versions
    case = finding.case
    wanted = (f"`{case.expect.type.replace('|', '` or `')}` matching `{case.expect.match}`"
              if case is not None and case.expect else "a clean error")
    what = _facts(finding.oracle, finding.exception).summary.format(
        oracle=finding.oracle, primitive=finding.primitive, message=finding.message,
        wanted=wanted, error=finding.message.split("; expected")[0])
    text = (f"On JAX {versions.get('jax')} (jaxlib {versions.get('jaxlib')}, Python "
            f"{versions.get('python')}), {what}. It shows {where}, "
            f"{_WHEN.get(finding.stage, finding.stage)}.")
    if finding.known:
        k = known_findings.BY_ID.get(finding.known)
        if k is not None:
            text += f" In short: {k.description}."
    notes = dict.fromkeys(s.report_note for s in _statements(finding) if s.report_note)
    return text + "".join(f"\n\nNote: {note}." for note in notes)


def _shown(path: str | None) -> str:
    """Where ``path`` runs a program, in the words of its public call."""
    return paths.fact(path, "SHOWN") if path in paths.NAMES else f"on the `{path}` path"


# When, in a finding's stage (`findings.stage_of`), the bug shows.
_WHEN = {"trace": "while JAX traces the program", "discharge": "as JAX discharges its state",
         "lowering": "while JAX lowers it", "execution": "when it runs"}

_NOT_SUPPORTED = "an error that says what is not supported"


def _fails_clearly(finding) -> bool:
    """A valid program classed as a usability issue (no TPU takes it; its
    known entry's review): it should fail, only clearly, whatever the oracle
    that caught it expected (no error, or the model's values). What other
    oracles compare (an invalid program's expected error, two DMA modes)
    stays as it is."""
    return severity(finding.to_record()) == USABILITY and finding.oracle in (
        "valid-runs", "model-vs-path")


def _said(finding, said: str) -> str:
    """The snippet's last comment (`_fails_clearly`: what it should do instead)."""
    if not _fails_clearly(finding):
        return said
    return re.sub(r"; expected\b.*$", f"; expected: {_NOT_SUPPORTED}", said)


def _output(finding, output: str) -> str:
    """The reproducer's actual against expected, as a report shows it: the
    expectation `_said` gives, where the program should fail clearly."""
    if not _fails_clearly(finding):
        return output.rstrip()
    return re.sub(r"^expected:.*$", f"expected: {_NOT_SUPPORTED}", output.rstrip(), flags=re.M)


def _statements(finding) -> list:
    return list(ir.flat(finding.case.body)) if finding.case is not None else []


def _kernel(finding) -> str:
    """"A kernel" as a title names it: with the public calls of a small one
    (a crash is never minimized, and its stack blames what ran last, not
    what the kernel asked for) and its 64-bit data."""
    calls = list(dict.fromkeys(s.public_call for s in _statements(finding) if s.public_call))
    what = "A kernel"
    if 1 <= len(calls) <= 2:
        what += " calling " + " and ".join(f"`{c}`" for c in calls)
    wide = sorted({r.kind for r in finding.case.refs if r.kind in ir.X64_DTYPES}
                  if finding.case is not None else ())
    return what + (f" on {' and '.join(wide)} data" if wide else "")


def _facts(oracle: str, exception: str | None):
    """The class that carries the facts of ``oracle``'s failures (one that
    raised ``exception``, or none)."""
    if oracle == findings.Crash.oracle:
        return findings.Crash
    return oracles.class_of(oracle, raised=exception is not None)


# What a finding's primitive does, by its symptom, for its title.
_DOES = {"crash": "kills the process", "timeout": "hangs", "oom": "runs out of memory",
         "exception": "raises {exception}", "wrong value": "computes wrong results",
         "invariant violation": "breaks the {oracle} invariant of discharge",
         "unsupported": "is refused as unsupported"}


def severity(record: dict) -> str:
    """The report's class for a maintainer (`oracles.SEVERITIES`): a
    reviewed known finding's own, else what its oracle says of its symptom."""
    if (k := known_findings.BY_ID.get(record.get("known") or "")) is not None and k.severity:
        return k.severity
    return _facts(record["oracle"], record.get("exception")).severity(record["symptom"])


def _rank(record: dict) -> tuple:
    """Where a report stands in the index: by severity, then by how many
    releases it is bad on, then by hits."""
    bad = sum(v.get("verdict") == "bad"
              for v in ((record.get("releases") or {}).get("releases") or {}).values())
    return oracles.SEVERITIES.index(severity(record)), -bad, -record.get("hits", 0), record["id"]


def title(finding) -> str:
    """The bug in words: a known finding's own description, else what its
    primitive does, where; never its signature. One whose reproducer needs
    JAX internals (its path's ``INTERNAL``, or its known entry's review)
    says so, as one that needs an opt-in flag does."""
    path = (finding.reproducer or {}).get("path")
    caveats = ["internal API"] if path in paths.MODULES and paths.fact(path, "INTERNAL") else []
    if finding.known and (k := known_findings.BY_ID.get(finding.known)) is not None and k.caveat:
        caveats = list(dict.fromkeys([*caveats, k.caveat]))
    return _title(finding) + "".join(f" ({c})" for c in caveats)


def _title(finding) -> str:
    if finding.known and (k := known_findings.BY_ID.get(finding.known)) is not None:
        return _first_clause(k.description)
    who = f"`{finding.primitive}`" if finding.primitive != "?" else "A kernel"
    where = (finding.reproducer or {}).get("path") or (finding.paths or ("?",))[0]
    if finding.oracle == "invalid-rejected":
        what = ("is accepted without the error it should raise" if finding.symptom == "missing error"
                else f"raises {finding.exception or 'an unrelated error'} instead of a clean error")
        return f"An invalid {who} {what} (`{where}`)"
    what = _DOES.get(finding.symptom, finding.symptom).format(
        exception=finding.exception or "an error", oracle=finding.oracle)
    if finding.oracle == "crash":   # its message: the symptom again, and where it was stuck
        # Where it was stuck is the JAX function to blame, not the statement
        # being traced then (a hang in tiling inference is no hang "in dma_start").
        if stuck := re.search(r", in (\S+)$", finding.message):
            return f"{_kernel(finding)} {what} in `{stuck[1]}` (`{where}`)"
        return f"{who} {what} on `{where}`"
    return f"{who} {what} on `{where}`: {finding.message[:90]}"


def _first_clause(text: str, longest: int = 150) -> str:
    """A description as a title: without its parenthetical asides (a shape
    like ' (3, 4)' stays), up to its first colon, semicolon or full stop
    where that leaves a sentence, and past ``longest`` characters up to the
    comma that ends its main clause.

    >>> _first_clause("a signal (or wait) on a view of shape (2, 1) is lost: it ...")
    'a signal on a view of shape (2, 1) is lost'
    """
    text = _without_asides(text)
    quoted = [m.span() for m in _QUOTED.finditer(text)]

    def stops(pattern, lo, hi):
        return [m.start() for m in re.finditer(pattern, text)
                if lo <= m.start() <= hi and not any(a < m.start() < b for a, b in quoted)]
    text = text[:min(stops(r"[:;.] ", 30, len(text)), default=len(text))]
    if len(text) > longest:
        text = text[:max(stops(", ", 60, longest), default=len(text))]
    return text.rstrip(" ,")


# a quoted message, not an apostrophe
_QUOTED = re.compile(r"(?<!\w)'[^']*'(?!\w)|\"[^\"]*\"")
_SHAPE = re.compile(r"\([\d, ()]*\)")


def _without_asides(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        if text.startswith(" (", i):
            depth, j = 0, i + 1   # to the matching parenthesis
            while j < len(text) and (depth := depth + {"(": 1, ")": -1}.get(text[j], 0)):
                j += 1
            if not _SHAPE.fullmatch(text, i + 1, j + 1):
                i = j + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def markdown(finding) -> str:
    repro = finding.reproducer or {}
    verified = repro.get("status")
    # (the fuzzer's own bookkeeping stays out of the text a maintainer reads)
    lines = [f"# {title(finding)}", "",
             f"<!-- discharge-fuzz finding {finding.id}; signature: {finding.signature}; "
             f"symptom: {finding.symptom}; stage: {finding.stage}; paths: "
             f"{', '.join(finding.paths)}; seen {finding.hits} time(s), first "
             f"{finding.first_seen}, last {finding.last_seen}; status: {finding.status}"
             + "".join(f"; looks like {r}" for r in finding.related) + " -->", "",
             f"**Severity:** {severity(finding.to_record())}.", "",
             *_blamed_line(finding.to_record())]
    if finding.case is not None and repro.get("path"):
        lines += ["```python", snippet.snippet(
            finding.case, repro["path"], jit=reproducer.rendering(repro)["jit"],
            plain=reproducer.rendering(repro).get("plain", False),
            said=_said(finding, snippet.said(repro, finding.message)),
            comparison=repro.get("comparison"),
            watchdog_s=reproducer.rendering(repro).get("watchdog_s")).rstrip(), "```", ""]
    lines += ["### Description", "", summary(finding), ""]
    if repro.get("script"):
        present = ("it dies or hangs" if repro.get("fatal") else "exit 1")
        lines += [f"The verifying reproducer is attached: [`{finding.id}.py`]({finding.id}.py) "
                  f"(it runs the program {_shown(repro.get('path'))}; {present} while the bug is present, "
                  "exit 0 once it is fixed).", ""]
    if repro.get("output"):
        lines += [f"Its output (actual vs expected) on JAX {finding.versions.get('jax')}:", "",
                  "```", _output(finding, repro["output"]), "```", ""]
    else:
        lines += [f"What the fuzzer saw: `{finding.message}`", ""]
    if finding.status == "flaky":
        lines += [f"**Not filed**: the standalone reproducer {verified or 'was not run'} "
                  "in a fresh interpreter (flaky).", ""]
    elif verified != "reproduces":
        lines += ["**Unverified**: the reproducer was not run in a fresh interpreter "
                  "(`--no-verify`).", ""]
    if finding.releases:
        lines += affected_section(finding.releases)
    if finding.instances:
        lines += ["### Other faces of this root cause", "",
                  "The same bug, as other oracles, primitives or paths saw it "
                  f"(root cause `{finding.root_cause}`):", "",
                  "| finding | oracle / primitive | paths | hits | last seen |", "|---|---|---|---|---|"]
        lines += [f"| {i['id']} | {_oracle(i)} | {', '.join(i['paths'])} | {i['hits']} | "
                  f"{i['last_seen'][:10]} |" for i in finding.instances]
        lines.append("")
    lines += ["### System info (python version, jaxlib version, accelerator, etc.)", "",
              # (where it was seen; a record filed before that was kept: this machine)
              "```", finding.versions.get("environment") or findings.environment(), "```", ""]
    return "\n".join(lines)


def write(reports_dir, finding) -> None:
    """Write the finding's Markdown, JSON and reproducer, then the index."""
    directory = os.fspath(reports_dir)
    base = os.path.join(directory, finding.id)
    atomic.write_text(base + ".json", json.dumps(finding.to_record(), indent=1, sort_keys=True) + "\n")
    atomic.write_text(base + ".md", markdown(finding))
    if (finding.reproducer or {}).get("script"):
        atomic.write_text(base + ".py", finding.reproducer["script"])
    write_index(directory)


def affected_section(bisected: dict) -> list[str]:
    """The report's *Affected releases* part, from `fuzz.triage.bisect`'s result
    (oldest release first: records keep their keys sorted as text)."""
    source = bisected.get("source", "`discharge-fuzz bisect`: the reproducer rendered and "
                                    "run on each release")
    lines = ["### Affected releases", "",
             f"{bisected['affected']['summary']} ({source}; *n/a*: the release cannot run "
             "it, never counted as good).", "", "| JAX | verdict | what happened |", "|---|---|---|"]
    for first, last, verdict, detail in _runs(bisected["releases"]):
        span = first if first == last else f"{first} to {last}"
        detail = detail.replace("{release}", span).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {span} | {verdict} | {detail} |")
    return lines + [""]


def _runs(tested: dict) -> list[tuple[str, str, str, str]]:
    """``tested``'s releases, oldest first, as runs of neighbours with the
    same verdict and the same detail but for the release's own number
    (first, last, verdict, detail with ``{release}`` for it): eighteen
    releases that lack an API are one row, not eighteen."""
    runs = []
    for release in releases.ordered(tested):
        v = tested[release]
        detail = v.get("detail", "").replace(f"JAX {release} ", "JAX {release} ")
        if runs and runs[-1][2:] == (v["verdict"], detail):
            runs[-1] = (runs[-1][0], release, *runs[-1][2:])
        else:
            runs.append((release, release, v["verdict"], detail))
    return runs


def verdict_here(record: dict) -> str | None:
    """What the bisected reproducer did on the tested release nearest at or
    below the running JAX (``bad``, ``good``, ``n/a``, ...); None if none."""
    tested = (record.get("releases") or {}).get("releases", {})
    below = [r for r in tested if compat.parse_release(r) <= compat.jax_version()]
    return tested[max(below, key=compat.parse_release)]["verdict"] if below else None


def add_releases(reports_dir, finding_id: str, bisected: dict) -> None:
    """Keep ``bisected`` in the finding's record and rewrite its report."""
    data = load(reports_dir, finding_id)
    if data is None:
        raise ReportError(f"{finding_id}: no report to add releases to")
    finding = findings.Finding.from_record(data)
    finding.releases = bisected
    write(reports_dir, finding)


def write_release_matrix(reports_dir) -> None:
    """``releases.md``: every bisected finding by release, one row each."""
    bisected = [r for r in records(reports_dir) if r.get("releases")]
    if not bisected:
        return
    columns = releases.ordered({v for r in bisected for v in r["releases"]["releases"]})
    rows = ["# Affected JAX releases", "",
            "Written by `discharge-fuzz bisect` (each finding's reproducer on each release) "
            "and `report --known` (a known finding's example, as `bisect --suppressions` "
            "measured it). "
            "*bad*: it reproduces; *good*: fixed (or not yet there); *other*: fails another "
            "way; *n/a*: the release cannot run it.", "",
            "| finding | range | " + " | ".join(columns) + " |",
            "|---|---|" + "---|" * len(columns)]
    for r in bisected:
        cells = [r["releases"]["releases"].get(c, {}).get("verdict", "") for c in columns]
        rows.append(f"| [{r['id']}]({r['id']}.md) | {r['releases']['affected']['summary']} | "
                    + " | ".join(cells) + " |")
    atomic.write_text(os.path.join(os.fspath(reports_dir), RELEASES), "\n".join(rows) + "\n")


def write_index(reports_dir) -> None:
    rows = ["# discharge-fuzz findings", "",
            "Generated by `discharge-fuzz report`; one row per distinct bug (signature). "
            "Status: *new* (first seen in the latest run), *still failing* (seen again or "
            "re-checked on this JAX), *fixed in this JAX* (its regression no longer fails), "
            "*unverified* (filed with `--no-verify`). A finding whose reproducer did not "
            "reproduce in a fresh interpreter is *flaky*: it is kept apart in `flaky/` "
            "and not to be filed. A whole-program oracle (one that compares two "
            "paths or runs) names no primitive. One report per root cause: another "
            "face of it (another oracle, primitive or path) is listed in its report. "
            "Sorted by severity (" +
            "; ".join(oracles.SEVERITIES) + "), then by the releases a finding is bad on, "
            "then by hits.", "",
            "| finding | severity | status | symptom | stage | oracle / primitive | paths | hits | first seen | last seen | reproducer | kernel lines | releases |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(records(reports_dir), key=_rank):
        repro = (r.get("reproducer") or {}).get("status", "-")
        rows.append(
            f"| [{r['id']}]({r['id']}.md) | {severity(r)} | {r['status']} | {r['symptom']} | {r['stage']} | "
            f"{_oracle(r)}{_faces(r)} | {', '.join(r['paths'])} | "
            f"{r['hits'] + sum(i['hits'] for i in r.get('instances', ()))} | "
            f"{r['first_seen'][:10]} | {r['last_seen'][:10]} | "
            f"{repro} | {r.get('kernel_lines', '-')} | "
            f"{(r.get('releases') or {}).get('affected', {}).get('summary', 'not bisected')} |")
    atomic.write_text(os.path.join(os.fspath(reports_dir), INDEX), "\n".join(rows) + "\n")
    write_upstream(reports_dir)


def blamed(record: dict) -> str:
    """Where JAX goes wrong, in words, from the root-cause key."""
    key = record.get("root_cause") or ""
    kind, _, rest = key.partition(":")
    if kind == "known" and (k := known_findings.BY_ID.get(rest)) is not None:
        return k.description
    if kind in findings.CRASH_SYMPTOMS:
        return f"it is stuck in `{rest}`"
    if kind == "rule":
        rules, primitive, how = rest.split(":", 2)
        return (f"the {rules} rule of `{primitive}`: the first statement whose value is "
                f"wrong ({how}) when the program is cut short")
    if kind and kind != "signature":
        return f"`{kind}` raised in `{rest.rsplit(':', 2)[-2]}:{rest.rsplit(':', 1)[-1]}`"
    return "the discharge of the statement the snippet shows (not isolated further)"


# Frames that say where JAX ran a program, not what it got wrong: an error a
# callback raised surfaces there, whatever raised it.
_MACHINERY = ("jax/_src/interpreters/pxla.py:", "jax/_src/api.py:", "jax/_src/compiler.py:")


def blamed_code(record: dict) -> tuple[str, list[str]]:
    """The JAX code a report points a maintainer to, as (how, ``file:function``
    list): "Blamed", the functions its known entry's description names (a
    reading of JAX's code); else "Raised in", where its exception was raised
    (`findings.raised_in`, of the JAX frames its signature keeps) unless that
    is only where JAX ran the program; else nothing."""
    kind, _, rest = (record.get("root_cause") or "").partition(":")
    if kind == "known" and (k := known_findings.BY_ID.get(rest)) is not None and (
            named := jax_source.named_in(k.description)):
        return "Blamed", named
    if kind == "rule" and (code := isolate.rule_code(*rest.split(":", 2)[:2])) is not None:
        return "Blamed", [code]
    frames = [f for part in record.get("signature", "").split("|") if part.startswith("jax/_src/")
              for f in part.split(">")]
    where = findings.raised_in(frames)
    if where is None or where.startswith(_MACHINERY) or ":<" in where:
        return "", []
    return "Raised in", [where]


def _blamed_line(record: dict) -> list[str]:
    how, code = blamed_code(record)
    return [f"**{how}:** {', '.join(f'`{c}`' for c in code)}.", ""] if code else []


def _snippet_of(reports_dir, finding_id: str) -> str | None:
    """The snippet a filed report opens with (its first Python block)."""
    path = os.path.join(os.fspath(reports_dir), f"{finding_id}.md")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        _, found, rest = f.read().partition("```python\n")
    return rest.split("```", 1)[0].rstrip() if found else None


def write_upstream(reports_dir) -> None:
    """``upstream.md``: the filed root causes a maintainer gets, most severe
    first (as the index ranks them), each an issue body in JAX's template,
    ready to paste: the snippet, actual against expected, the releases it is
    bad on and where JAX goes wrong. Fixed and flaky findings stay out."""
    filed = [r for r in sorted(records(reports_dir), key=_rank)
             if r["status"] not in ("fixed in this JAX", "flaky")]
    out = ["# Upstream queue", "",
           "Written by `discharge-fuzz report` with `index.md`: one item per root cause, "
           "most severe first; each is an issue body in JAX's bug template. The verified "
           "reproducer of each is `<id>.py` beside this file.", ""]
    for n, r in enumerate(filed, 1):
        finding = findings.Finding.from_record(r)
        repro = r.get("reproducer") or {}
        out += [f"## {n}. {title(finding)}", "",
                f"{severity(r).capitalize()}; [{r['id']}]({r['id']}.md).", "",
                *_blamed_line(r), "### Description", ""]
        if code := _snippet_of(reports_dir, r["id"]):   # the report's own, not rendered again
            out += ["```python", code, "```", ""]
        if repro.get("output"):
            out += ["Actual against expected:", "", "```", _output(finding, repro["output"]), "```", ""]
        affected = (r.get("releases") or {}).get("affected", {}).get("summary", "not bisected")
        out += [f"Affected JAX releases: {affected}.", "",
                f"Where JAX goes wrong: {blamed(r)}.", ""]
    atomic.write_text(os.path.join(os.fspath(reports_dir), UPSTREAM), "\n".join(out) + "\n")


def _faces(record: dict) -> str:
    """How many other faces (oracles, primitives) of its root cause a report holds."""
    n = len(record.get("instances", ()))
    return f" (+{n} other face{'s' if n > 1 else ''})" if n else ""


def _oracle(record: dict) -> str:
    """``oracle / primitive``; a whole-program oracle's finding has no primitive ("?")."""
    return record["oracle"] + (f" / {record['primitive']}" if record["primitive"] != "?" else "")

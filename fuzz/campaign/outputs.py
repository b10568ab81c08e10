"""What a campaign leaves for machines and people: ``summary.json`` (all of
it), ``junit.xml`` (one test case per finding, for CI systems) and
``summary.html`` (key numbers and plots, inline SVG, no scripts). Every file
is written atomically."""
from __future__ import annotations

import html
import json
import os
from xml.etree import ElementTree as ET

from fuzz import atomic

_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def write_all(out_dir, summary: dict) -> None:
    atomic.write_text(os.path.join(out_dir, "summary.json"),
                      json.dumps(summary, indent=1, sort_keys=True) + "\n")
    atomic.write_text(os.path.join(out_dir, "junit.xml"), junit(summary))
    atomic.write_text(os.path.join(out_dir, "summary.html"), page(summary))


def junit(summary: dict) -> str:
    """New findings fail, filed ones seen again and known ones are skipped,
    and campaign errors are errors; one passing case per path says it ran."""
    f = summary["findings"]
    suite = ET.Element("testsuite", name="discharge-fuzz campaign",
                       time=str(summary["seconds"]), timestamp=summary["started"])
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}

    def case(classname, name, outcome=None, message="", text=""):
        el = ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")
        counts["tests"] += 1
        if outcome:
            counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[outcome]] += 1
            sub = ET.SubElement(el, outcome, message=message[:500])
            sub.text = text
    for path, n in sorted(summary["cases_per_path"].items()):
        case("paths", f"{path}: {n} cases")
    for finding in f["new"]:
        case(f"findings.{finding['oracle']}", finding["id"], "failure",
             f"{finding['symptom']} on {finding['path']}: {finding['message']}",
             finding.get("stack", "") or finding["signature"])
    for finding in f["seen_again"]:
        case(f"findings.{finding['oracle']}", finding["id"], "skipped", "filed before this run")
    for finding in f.get("flaky", ()):
        case(f"findings.{finding['oracle']}", finding["id"], "skipped",
             "flaky: its reproducer did not reproduce")
    for kid, n in sorted(f["known"].items()):
        case("known", kid, "skipped", f"known finding, hit {n} times")
    for error in summary["errors"]:
        case("campaign", "campaign error", "error", error)
    suite.attrib.update({k: str(v) for k, v in counts.items()})
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def line_chart(title: str, series: dict[str, list[tuple[float, float]]],
               y_label: str, width=760, height=220) -> str:
    """An SVG line chart of ``series`` (name -> [(t seconds, value)]), its
    legend to the right of the plot (inside, it hid the lines' ends)."""
    left, right, top, bottom = 56, 132, 26, 34
    points = [p for s in series.values() for p in s]
    t_max = max((t for t, _ in points), default=1) or 1
    y_max = max((v for _, v in points), default=1) or 1
    sx = lambda t: left + (width - left - right) * t / t_max  # noqa: E731
    sy = lambda v: height - bottom - (height - top - bottom) * v / y_max  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'role="img" aria-label="{html.escape(title)}">',
           f'<text x="{left}" y="16" font-weight="bold">{html.escape(title)}</text>',
           f'<line x1="{left}" y1="{sy(0)}" x2="{width - right}" y2="{sy(0)}" stroke="#888"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{sy(0)}" stroke="#888"/>',
           f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="11">{y_max:g}</text>',
           f'<text x="{left - 4}" y="{sy(0)}" text-anchor="end" font-size="11">0</text>',
           f'<text x="{width - right}" y="{height - 8}" text-anchor="end" font-size="11">'
           f'{t_max:.0f} s</text>',
           f'<text x="4" y="{top + (height - top - bottom) / 2}" font-size="11">'
           f'{html.escape(y_label)}</text>']
    for i, (name, pts) in enumerate(series.items()):
        color = _COLORS[i % len(_COLORS)]
        if pts:
            coords = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in pts)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>')
        out.append(f'<text x="{width - right + 10}" y="{top + 14 * (i + 1)}" fill="{color}" '
                   f'font-size="12">{html.escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bar_chart(title: str, bars: dict[str, float], unit: str, width=640) -> str:
    height = 40 + 24 * max(len(bars), 1)
    top = max(bars.values(), default=1) or 1
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'role="img" aria-label="{html.escape(title)}">',
           f'<text x="8" y="16" font-weight="bold">{html.escape(title)}</text>']
    for i, (name, value) in enumerate(bars.items()):
        y = 28 + 24 * i
        w = (width - 220) * value / top
        out += [f'<text x="8" y="{y + 14}" font-size="12">{html.escape(name)}</text>',
                f'<rect x="110" y="{y}" width="{w:.1f}" height="18" fill="{_COLORS[0]}"/>',
                f'<text x="{116 + w:.1f}" y="{y + 14}" font-size="12">{value:g} {unit}</text>']
    out.append("</svg>")
    return "\n".join(out)


def page(summary: dict) -> str:
    tl = summary["timeline"]
    f = summary["findings"]
    cov = summary["coverage"]
    charts = [
        line_chart(f"Distinct findings over time ({tl[-1]['exposed'] if tl else 0} hit)",
                   {"new": [(p["t"], p["exposed_new"]) for p in tl],
                    "filed before": [(p["t"], p["exposed_filed_before"]) for p in tl],
                    "known": [(p["t"], p["exposed_known"]) for p in tl]}, "findings"),
        line_chart(f"Rules exercised (of {cov['rules_total']} discharge, "
                   f"{cov['transform_rules_total']} transformation)",
                   {"discharge": [(p["t"], p["rules"]) for p in tl],
                    "transformation": [(p["t"], p["transform_rules"]) for p in tl]}, "rules"),
        bar_chart("Throughput per worker",
                  {f"worker {i}": w["cases_per_s"] for i, w in summary["workers"].items()},
                  "cases/s"),
        line_chart("Resident memory of the workers (sum)",
                   {"RSS": [(p["t"], p["rss_mb"]) for p in tl]}, "MB"),
    ]
    facts = [("JAX", summary["jax"]), ("started", summary["started"]),
             ("wall time", f"{summary['seconds']} s (stopped by {summary['stopped_by']})"),
             ("cases", f"{summary['cases']} ({summary['cases_per_s']} /s)"),
             ("cases per path", ", ".join(f"{k} {v}" for k, v in
                                          sorted(summary["cases_per_path"].items()))),
             ("findings", f"{len(f['new'])} new, {len(f['seen_again'])} filed before, "
                          f"{sum(f['known'].values())} known hits, {len(f['fixed'])} fixed"),
             ("coverage", f"{len(cov['rules_run'])} of {cov['rules_total']} discharge rules, "
                          f"{len(cov['transform_rules_run'])} of {cov['transform_rules_total']} "
                          "transformation rules (batch, jvp, transpose of get, swap, addupdate)"),
             ("peak worker RSS", f"{summary['rss_mb']['worker_peak']} MB"),
             ("exit code", summary["exit_code"])]
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
                   for k, v in facts)
    found = "".join(
        f"<tr><td>{html.escape(x['id'])}</td><td>{'new' if x['new'] else 'filed before'}</td>"
        f"<td>{html.escape(x['oracle'])}</td><td>{html.escape(x['symptom'])}</td>"
        f"<td>{html.escape(x['path'])}</td><td>{html.escape(x['message'])}</td></tr>"
        for x in f["new"] + f["seen_again"])
    exposed = "".join(
        f"<tr><td>{html.escape(x['id'])}</td><td>{html.escape(x['kind'])}</td>"
        f"<td>{x['t']}</td><td>{x['case']}</td></tr>" for x in summary.get("exposure", ()))
    missed = "".join(f"<tr><td>{html.escape(rule)}</td><td>{html.escape(why)}</td></tr>"
                     for rule, why in {**cov["why_not_run"], **cov["transform_why_not_run"]}.items())
    problems = "".join(f"<li>{html.escape(m)}</li>" for m in summary["errors"] + summary["warnings"])
    return ("<!doctype html><meta charset='utf-8'><title>discharge-fuzz campaign</title>"
            "<style>body{font-family:sans-serif;max-width:60em;margin:1em auto}"
            "th{text-align:left;padding-right:1em}td{padding-right:1em}</style>"
            f"<h1>discharge-fuzz campaign</h1><table>{rows}</table>"
            + "".join(f"<p>{c}</p>" for c in charts)
            + ("<h2>Findings</h2><table><tr><th>id</th><th>status</th><th>oracle</th>"
               f"<th>symptom</th><th>path</th><th>message</th></tr>{found}</table>" if found else "")
            + ("<h2>Time to exposure</h2><p>Each finding's first hit in this run, new, "
               "filed before or known.</p><table><tr><th>finding</th><th>kind</th>"
               f"<th>seconds</th><th>case</th></tr>{exposed}</table>" if exposed else "")
            + ("<h2>Rules not exercised</h2><table><tr><th>rule</th><th>why</th></tr>"
               f"{missed}</table>" if missed else "")
            + (f"<h2>Problems</h2><ul>{problems}</ul>" if problems else "") + "\n")

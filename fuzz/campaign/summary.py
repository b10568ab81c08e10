"""What a campaign prints: one progress line while it runs, and a summary at
the end (from the same dictionary that goes into ``summary.json``)."""
from __future__ import annotations

import collections
import sys
import time

from fuzz.suppressions import known_findings

# Why a registered discharge rule is out of the generator's reach (JAX 0.12
# names; shared/DISCHARGE_SURFACE.md says how each is reached). A rule not
# listed is drawn for: a run that missed it was too short (dma_start and
# dma_wait are reached through the control family's pipelines, which copy
# their blocks with DMAs).
OUT_OF_REACH = {
    "get_global": "unreachable: pl.get_global has no operands and no effect to discharge",
    "eval_jaxpr": "needs a jax.jit(f).trace(ref) Traced object called inside a trace: not drawn yet",
}


# The oracle that transforms programs, and so reaches the transformation
# rules ("get:batch") of one kind.
TRANSFORMED_BY = {
    # pallas_call's batching rule adds a grid axis: its kernel's statements stay unbatched
    "batch": "the vmap-stack oracle on the eager path (jit of vmap of its jax.new_ref program)",
    "jvp": "the grad-matches oracle (eager or run_state path, a float32 or float64 ref, "
           "no semaphore)",
    "transpose": "the grad-matches oracle in reverse mode (as for jvp, and no while loop; "
                 "run_state's reverse mode fails, a known finding)",
}


def why_not_run(rule: str) -> str:
    primitive, _, kind = rule.partition(":")
    if kind in TRANSFORMED_BY:
        return (f"only {TRANSFORMED_BY[kind]} reaches it, on a case that uses {primitive}: "
                "no case of this run did")
    return OUT_OF_REACH.get(rule, "drawn, but no case of this run reached it")


def progress_line(c) -> str:
    """cases/s, cases per path, distinct findings, rule coverage."""
    elapsed = time.monotonic() - c.start
    paths = " ".join(f"{p} {n}" for p, n in sorted(c.per_path.items()))
    new = sum(1 for f in c.findings if f["new"])
    live = sum(1 for s in c.slots if s.proc is not None)
    return (f"[{_clock(elapsed)}/{_clock(c.config.budget_s)}] {c.cases} cases "
            f"{c.cases / elapsed if elapsed else 0:.1f}/s | {paths or 'starting workers'} | "
            f"findings {new} new, {len(c.findings) - new} filed before, "
            f"{sum(c.known.values())} known hits | rules {len(c.rules)}/{len(c.rules_all)} "
            f"discharge, {len(c.transform_rules)}/{len(c.transform_rules_all)} transformation | "
            f"workers {live}/{len(c.slots)}, restarts {sum(c.restarts.values())}"
            + (f" | stopping ({c.stop_reason})" if c.stop_reason else ""))


class Progress:
    """Redraws one line on a terminal every second; on a log, prints a line
    every 10 s."""

    def __init__(self, stream=sys.stderr):
        self.stream, self.last = stream, 0.0
        self.tty = stream.isatty()
        self.every_s = 1.0 if self.tty else 10.0

    def __call__(self, campaign):
        if time.monotonic() - self.last < self.every_s:
            return
        self.last = time.monotonic()
        line = progress_line(campaign)
        self.stream.write("\r\x1b[K" + line if self.tty else line + "\n")
        self.stream.flush()

    def done(self):
        if self.tty:
            self.stream.write("\n")


def text(summary: dict, out_dir: str) -> str:
    f = summary["findings"]
    cov = summary["coverage"]
    lines = [f"== campaign: {summary['cases']} cases in {summary['seconds']}s "
             f"({summary['cases_per_s']} cases/s), stopped by {summary['stopped_by']}, "
             f"seed {summary['config']['seed']}"]
    minutes = max(summary["seconds"], 1e-9) / 60   # what an expensive path or oracle gets
    for path, n in sorted(summary["cases_per_path"].items()):
        skipped = summary["not_applicable_per_path"].get(path, 0)
        lines.append(f"   {path:<14} {n:>7} run ({n / minutes:.1f}/min)"
                     + (f", {skipped} not applicable" if skipped else ""))
    for index, w in summary["workers"].items():
        lines.append(f"   worker {index}: {w['cases']} cases, {w['cases_per_s']} cases/s")
    if summary.get("cases_per_oracle"):
        lines.append("   values compared per oracle (per minute): " + ", ".join(
            f"{o} {n} ({n / minutes:.1f})" for o, n in sorted(summary["cases_per_oracle"].items())))
    for kind, prefix in (("discharge", ""), ("transformation", "transform_")):
        lines.append(f"   {kind} rules exercised: {len(cov[prefix + 'rules_run'])} of "
                     f"{cov[prefix + 'rules_total']}: " + ", ".join(cov[prefix + "rules_run"]))
        for rule in cov[prefix + "rules_not_run"]:
            lines.append(f"   not exercised: {rule}: {why_not_run(rule)}")
    rss = summary["rss_mb"]
    lines.append(f"   worker RSS: {rss['worker_start']} MB at start, peak {rss['worker_peak']} MB; "
                 f"restarts: {summary['restarts'] or 'none'}")
    for symptom in sorted({d["symptom"] for d in summary.get("died_on", ())}):
        died = [d for d in summary["died_on"] if d["symptom"] == symptom]
        sizes = collections.Counter(d["devices"] for d in died if d["devices"] is not None)
        lines.append(f"   cases with a {symptom}: {len(died)}, {sum(d['valid'] for d in died)} "
                     f"valid, on a mesh: {dict(sizes) or 'none'} (summary.json died_on)")
    if exposure := summary.get("exposure"):
        kinds = collections.Counter(x["kind"] for x in exposure)
        lines.append(f"   time to exposure (summary.json exposure): {len(exposure)} findings hit "
                     f"({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), first hits "
                     f"from {exposure[0]['t']}s to {exposure[-1]['t']}s")
    if f["known"]:
        lines.append("   known findings hit (counted, not reported):")
        for kid, n in sorted(f["known"].items(), key=lambda kv: -kv[1]):
            known = known_findings.BY_ID.get(kid)   # workers may run a newer checkout
            lines.append(f"     {n:>5}  {kid}: {known.description if known else '(not listed here)'}")
    if summary["undefined_cases"]:
        lines.append(f"   valid cases with no defined meaning (a wait that would block "
                     f"forever, a race, ...; compared path to path at most): "
                     f"{summary['undefined_cases']}")
    if summary.get("unmasked_cases"):
        lines.append(f"   cases run again without a known crash's trigger (--unmask): "
                     f"{summary['unmasked_cases']}")
    if summary.get("projected_cases"):
        lines.append(f"   cases run again as a path that refused them can (--project): "
                     f"{summary['projected_cases']}")
    if verdicts := summary.get("verdicts"):
        lines.append("   valid cases by the model's verdict: " + ", ".join(
            f"{v} {n}" for v, n in sorted(verdicts.items(), key=lambda kv: -kv[1])))
    if meshes := summary.get("cases_per_mesh"):
        sizes = sorted((k for k in meshes if " " not in k), key=int)
        lines.append("   cases on a mesh, by its devices: " + ", ".join(
            f"{k}: {meshes[k]} (" + ", ".join(f"{v.split()[1]} {n}" for v, n in sorted(
                meshes.items()) if v.startswith(k + " ")) + ")" for k in sizes))
    if summary.get("artifacts"):
        lines.append("   artifacts of the fuzzer's stand-ins (counted, not JAX bugs):")
        for what, n in sorted(summary["artifacts"].items(), key=lambda kv: -kv[1]):
            lines.append(f"     {n:>5}  {what}")
    if summary["unsupported"]:
        lines.append("   unsupported by a path (valid programs refused; fuzz/suppressions/unsupported.py):")
        for uid, n in sorted(summary["unsupported"].items(), key=lambda kv: -kv[1]):
            lines.append(f"     {n:>5}  {uid}")
    if f["fixed"]:
        lines.append(f"   filed findings that no longer fail: {', '.join(f['fixed'])}")
    if f["seen_again"]:
        lines.append(f"   filed before, seen again: {', '.join(x['id'] for x in f['seen_again'])}")
    if done := summary.get("finished_filing"):
        lines.append(f"   filing after the workers stopped: {done['completed']} minimized and "
                     f"verified in {done['seconds']} s; {done['left_unverified']} left unverified")
    if f.get("flaky"):
        lines.append(f"   flaky (reproducer did not reproduce; reports/flaky/, not new): "
                     f"{', '.join(x['id'] for x in f['flaky'])}")
    lines.append(f"   new findings: {len(f['new'])}")
    for x in f["new"]:
        lines.append(f"     {x['id']}  [{x['symptom']}] {x['path']}: {x['message'][:160]}")
    for message in summary["warnings"]:
        lines.append(f"   warning: {message}")
    for message in summary["errors"]:
        lines.append(f"   campaign error: {message}")
    lines.append(f"   outputs: {out_dir}/summary.json, junit.xml, summary.html")
    return "\n".join(lines)


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

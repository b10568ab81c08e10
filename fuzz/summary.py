"""The main job's summary: throughput per path, known findings hit, and each
new failure grouped by oracle and primitive with its shrunk program."""
from __future__ import annotations

import collections

from fuzz import emit, known_findings


def text(results: dict) -> str:
    lines = []
    for name, stats in results.items():
        rate = stats.total / stats.seconds if stats.seconds else 0.0
        lines.append(f"\n== {name} programs: {stats.total} cases in "
                     f"{stats.seconds:.1f}s ({rate:.1f} cases/s)")
        for path in sorted(k for k in stats.cases if k != "case"):
            skipped = stats.skipped.get(path, 0)
            lines.append(f"   {path:<12} {stats.cases[path]:>6} run"
                         + (f", {skipped} not applicable" if skipped else ""))
        for path, n in stats.skipped.items():
            if path not in stats.cases:
                lines.append(f"   {path:<12} {0:>6} run, {n} not applicable")
        if stats.known:
            lines.append("   known findings hit (counted, not raised):")
            for kid, n in stats.known.most_common():
                lines.append(f"     {n:>5}  {kid}: {known_findings.BY_ID[kid].description}")
        groups = collections.defaultdict(list)
        for f in stats.failures:
            groups[(f.oracle, f.primitive)].append(f)
        lines.append(f"   new failures: {len(stats.failures)}")
        for (oracle, primitive), fs in sorted(groups.items()):
            lines.append(f"   -- {oracle} / {primitive}")
            for f in fs:
                lines.append(f"      {type(f).__name__}: {f}")
                if f.case is not None:
                    lines.append("      shrunk program:")
                    lines += ["        " + l for l in
                              _declarations(f.case) + emit.kernel_source(f.case).splitlines()]
        for e in stats.errors:
            lines.append(f"   run error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return "\n".join(lines)


def _declarations(case):
    decls = [f"# s{i}: {s.kind}{list(s.shape)}{' (run_scoped)' if s.scoped else ''}"
             for i, s in enumerate(case.semaphores)]
    if case.dynamic_values:
        decls.append(f"# dyn = {list(case.dynamic_values)}")
    if case.expect:
        decls.append(f"# expected: {case.expect.type} /{case.expect.match}/ from {case.expect.primitive}")
    return decls

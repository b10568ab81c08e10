"""The nightly job: a time-budgeted campaign over crash-isolated workers.

The supervisor starts N worker processes (`fuzz.campaign.workers`), reads their event
pipes, shows progress, and turns a worker that dies, hangs past the per-case
timeout or outgrows its memory limit into a crash finding (symptom crash /
timeout / oom) on the case the worker saved before running it; then a fresh
worker takes its place. At the end of the budget, or on SIGINT/SIGTERM,
workers get SIGTERM (they file what they found and exit), stragglers are
killed after a grace period, and the run's summary is written and returned.
"""
from __future__ import annotations

import collections
import json
import os
import random
import re
import resource
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

import jax

from fuzz import compat, exits, paths, serialize
from fuzz.campaign import (DEFAULT_FILING, DEFAULT_PROJECT, DEFAULT_SCHEDULE, DEFAULT_STRATEGIES,
                           DEFAULT_UNMASK, outputs, workers)
from fuzz.campaign.summary import why_not_run
from fuzz.triage import filing, findings

MODES = ("hypothesis", "atheris", "mixed")
GRACE_S = 15.0          # how long stopping workers may take to file and exit
SAMPLE_EVERY_S = 2.0    # timeline resolution for the plots
SAVE_EVERY_S = 30.0     # the summary on disk is never older than this
MAX_BROKEN = 3          # worker start-up / fuzzer errors before the campaign gives up
MAX_WARNINGS = 100      # distinct warnings kept (the latest)
MAX_SAMPLES = 1000      # timeline points; beyond, every other one goes and sampling slows


@dataclass
class CampaignConfig:
    budget_s: float
    workers: int = 1
    mode: str = "hypothesis"
    seed: int | None = None
    strategies: list[str] = field(default_factory=lambda: list(DEFAULT_STRATEGIES))
    paths: list[str] | None = None
    oracles: list[str] | None = None
    schedule: str = DEFAULT_SCHEDULE   # `fuzz.campaign.SCHEDULES`
    filing: str = DEFAULT_FILING       # `fuzz.campaign.FILINGS`
    unmask: bool = DEFAULT_UNMASK
    project: bool = DEFAULT_PROJECT
    include_known: bool = False
    unsupported_are_findings: bool = False
    database: str | None = None
    corpus_dir: str = "corpus"
    reports_dir: str = "reports"
    out_dir: str = "runs/latest"
    case_timeout_s: float = 30.0
    filing_timeout_s: float = 600.0
    max_rss_mb: int | None = None
    recycle_after: int = 2000
    clear_caches_every: int = 100
    max_cases: int | None = None
    minimize: bool = True
    verify: bool = True
    # After the workers stop: time to minimize and verify what they filed
    # unverified as they stopped (`filing.complete`).
    finish_filing_s: float = 300.0
    setup: list[str] = field(default_factory=list)
    # Known findings whose triggers the workers count, with whether what
    # shows each reached the case (`property.count_triggers`; about 0.1 ms
    # a case per finding): the summary's "triggers".
    triggers: list[str] = field(default_factory=list)


@dataclass
class Slot:
    """One worker place: the process currently in it and what it is doing."""
    index: int
    generation: int = -1
    proc: subprocess.Popen | None = None
    reader: int | None = None
    buffer: bytes = b""
    mode: str = "hypothesis"
    phase: str = "starting"          # starting | idle | case | filing
    phase_since: float = 0.0
    last_done: int = 0
    kill_reason: str | None = None
    error: str | None = None
    rss_mb: float = 0.0
    cases: int = 0
    busy_s: float = 0.0
    alive_s: float = 0.0
    started: float = 0.0
    # The corpus file its next worker replays from (None: it replays none),
    # and the one its worker is replaying: the next takes over after a death.
    replay_from: int | None = None
    replaying: int | None = None


def rss_mb(pid: int) -> float:
    """Resident memory of a process from /proc (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


class Campaign:
    def __init__(self, config: CampaignConfig, progress=None):
        self.config = config
        self.progress = progress            # callable(campaign) or None
        self.seed = config.seed if config.seed is not None else random.getrandbits(32)
        self.state_dir = os.path.join(config.out_dir, "state")
        self.slots = [Slot(i, replay_from=0 if i == 0 else None) for i in range(config.workers)]
        self.selector = selectors.DefaultSelector()
        self.stop_reason: str | None = None
        self.cases = 0
        self.per_path = collections.Counter()
        self.skipped = collections.Counter()
        self.known = collections.Counter()
        self.already = collections.Counter()
        self.undefined = 0
        self.unmasked = 0   # cases run again without a known crash's trigger
        self.projected = 0  # cases run again as a path that refused them can
        self.verdicts = collections.Counter()
        self.meshes = collections.Counter()   # cases on a mesh by size (and verdict)
        self.unsupported = collections.Counter()
        self.artifacts = collections.Counter()   # stand-in artifacts (`CaseReport.artifacts`)
        self.compared = collections.Counter()   # cases each comparing oracle compared
        # known finding -> [cases drawn with its trigger, of those reached]
        self.triggers: dict[str, list[int]] = {}
        self.rules: set[str] = set()
        self.rules_all: set[str] = set()   # every registered discharge rule
        # get, swap and addupdate's batching, JVP and transpose rules ("get:batch")
        self.transform_rules: set[str] = set()
        self.transform_rules_all: set[str] = set()
        self.findings: list[dict] = []      # one per signature filed by this run
        self.finished_filing: dict | None = None   # what `_finish_filing` did
        self.fixed: list[str] = []
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self.restarts = collections.Counter()
        # Every case a worker died on (one finding per signature keeps only
        # the first): whether a valid program, or one on a mesh, hung.
        self.died_on: list[dict] = []
        # Each finding's first hit (new, filed before or known): seconds into
        # the run and the case number, the measure fuzzer benchmarks use.
        self.exposure: dict[str, dict] = {}
        self.timeline: list[dict] = []
        self.peak_rss_mb = 0.0
        self.rss_start_mb: float | None = None
        self.retired = []                   # (index, generation, cases, busy_s, alive_s)

    # -- workers ----------------------------------------------------------
    def _mode_of(self, index):
        if self.config.mode == "mixed":
            return ("hypothesis", "atheris")[index % 2]
        return self.config.mode

    def _spawn(self, slot: Slot, now: float):
        c = self.config
        slot.generation += 1
        slot.mode = self._mode_of(slot.index)
        for stale in (workers.inflight_path(self.state_dir, slot.index),
                      workers.fault_path(self.state_dir, slot.index)):
            try:   # what the previous worker in this place left is not this one's
                os.unlink(stale)
            except FileNotFoundError:
                pass
        read_fd, write_fd = os.pipe()
        cfg = workers.WorkerConfig(
            index=slot.index, generation=slot.generation, mode=slot.mode,
            seed=(self.seed * 1000003 + slot.index * 7919 + slot.generation) % 2**63,
            strategies=c.strategies, state_dir=self.state_dir, corpus_dir=c.corpus_dir,
            reports_dir=c.reports_dir, database=c.database, events_fd=write_fd,
            paths=c.paths, oracles=c.oracles, schedule=c.schedule, filing=c.filing,
            unmask=c.unmask, project=c.project, include_known=c.include_known,
            unsupported_are_findings=c.unsupported_are_findings,
            minimize=c.minimize, verify=c.verify, clear_caches_every=c.clear_caches_every,
            recycle_after=c.recycle_after, setup=c.setup, triggers=c.triggers,
            max_cases=(None if c.max_cases is None
                       else max(1, (c.max_cases - self.cases) // c.workers)),
            replay_from=slot.replay_from, seeded=c.seed is not None, parent=os.getpid())
        slot.replay_from = slot.replaying = None
        log = open(os.path.join(self.state_dir, f"worker-{slot.index}.log"), "ab")
        slot.proc = subprocess.Popen(
            [sys.executable, "-m", "fuzz.campaign.workers", cfg.to_json()], pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            start_new_session=True)   # Ctrl-C reaches the supervisor only
        log.close()
        os.close(write_fd)
        os.set_blocking(read_fd, False)
        slot.reader, slot.buffer = read_fd, b""
        self.selector.register(read_fd, selectors.EVENT_READ, slot)
        slot.phase, slot.phase_since, slot.started = "starting", now, now
        slot.last_done, slot.kill_reason, slot.error = 0, None, None
        slot.cases, slot.busy_s = 0, 0.0

    def _read(self, slot: Slot, now: float):
        while True:
            try:
                chunk = os.read(slot.reader, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            slot.buffer += chunk
        *lines, slot.buffer = slot.buffer.split(b"\n")
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self._on_event(slot, event, now)

    def _on_event(self, slot: Slot, ev: dict, now: float):
        kind = ev["e"]
        if kind == "ready":
            self.rules_all.update(ev["rules_all"])
            self.transform_rules_all.update(ev["transform_rules_all"])
            slot.phase, slot.phase_since = "idle", now
        elif kind == "start":
            slot.phase, slot.phase_since = "case", now
        elif kind == "done":
            slot.phase, slot.phase_since, slot.last_done = "idle", now, ev["seq"]
            slot.cases += 1
            slot.busy_s += ev["s"]
            self.cases += 1
            self.per_path.update(ev["paths"])
            self.skipped.update(ev["skipped"])
            self.known.update(ev["known"])
            self.already.update(ev["already"])
            self.undefined += ev["undefined"]
            self.unmasked += ev.get("unmasked", 0)
            self.projected += ev.get("projected", 0)
            self.verdicts.update(ev.get("verdicts", {}))
            self.meshes.update(ev.get("meshes", {}))
            self.unsupported.update(ev["unsupported"])
            self.artifacts.update(ev.get("artifacts", {}))
            self.compared.update(ev.get("compared", {}))
            self.rules.update(ev["rules"])
            self.transform_rules.update(ev["transform_rules"])
            for fid, (drawn, reached) in ev.get("triggers", {}).items():
                seen = self.triggers.setdefault(fid, [0, 0])
                seen[0], seen[1] = seen[0] + drawn, seen[1] + reached
            for fid, kind in ev.get("hits", {}).items():
                self._exposed(fid, kind, now, self.cases)
        elif kind == "filing":
            slot.phase, slot.phase_since = "filing", now
        elif kind == "finding":
            slot.phase, slot.phase_since = "idle", now
            self._add_finding({k: v for k, v in ev.items() if k != "e"}, now)
        elif kind == "fixed":
            self.fixed.append(ev["id"])
        elif kind == "replaying":
            slot.replaying = ev["at"]
        elif kind == "warning" and ev["message"] not in self.warnings:
            self.warnings.append(ev["message"])
            del self.warnings[:-MAX_WARNINGS]
        elif kind == "error":
            slot.error = ev["message"]

    def _exposed(self, fid: str, kind: str, now: float, case: int):
        """The first hit of finding ``fid`` (later hits change nothing)."""
        self.exposure.setdefault(fid, {"id": fid, "kind": kind, "t": round(now - self.start, 1),
                                       "case": case})

    def _add_finding(self, finding: dict, now: float):
        finding["t"] = round(now - self.start, 1)
        if not any(f["signature"] == finding["signature"] for f in self.findings):
            self.findings.append(finding)

    def _exited(self, slot: Slot, now: float):
        self._read(slot, now)
        self.selector.unregister(slot.reader)
        os.close(slot.reader)
        rc = slot.proc.returncode
        slot.alive_s = now - slot.started
        self.retired.append((slot.index, slot.generation, slot.cases, slot.busy_s, slot.alive_s))
        stopped = slot.kill_reason == "stop" or (
            slot.kill_reason is None and (rc == 0 or (self.stop_reason and rc == -signal.SIGTERM)))
        if stopped:
            if not self.stop_reason:
                self.restarts["recycled"] += 1
        elif rc in (exits.EXIT_SETUP, exits.EXIT_BROKEN) and slot.kill_reason is None:
            self.errors.append(f"worker {slot.index}: {slot.error or f'exit {rc}'}")
            if len(self.errors) >= MAX_BROKEN:
                self._stop("errors", now)
        else:
            self._crash_finding(slot, rc, now)
        if slot.replaying is not None:   # the rest of the corpus, after the file it died on
            slot.replay_from = slot.replaying + 1
        slot.proc = None
        if not self.stop_reason and not self._enough_cases():
            self._spawn(slot, now)

    def _crash_finding(self, slot: Slot, rc: int, now: float):
        symptom = ("timeout" if slot.kill_reason == "timeout" else
                   "oom" if slot.kill_reason == "oom" or rc in (exits.EXIT_OOM, -signal.SIGKILL)
                   else "crash")
        self.restarts[symptom] += 1
        case, seq = self._inflight(slot)
        how = (f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}")
        if slot.kill_reason == "timeout":
            how = f"no progress for {self.config.case_timeout_s:g}s, killed"
        elif slot.kill_reason == "oom":
            how = f"resident memory {slot.rss_mb:.0f} MB over --max-rss-mb, killed"
        if case is None or (seq <= slot.last_done and slot.phase != "filing"):
            self.warnings.append(f"worker {slot.index} ({how}) died outside a case")
            return
        stack = self._fault_stack(slot)
        # Innermost first: the path module (or the path's program) it died in.
        hit = [m for m in re.findall(r"fuzz/paths/(\w+)\.py|<discharge-fuzz kernel (\w+)", stack)
               for m in m if m in paths.NAMES]
        path = hit[0] if hit else "?"
        where = " while filing a finding" if slot.phase == "filing" else ""
        # Where it was stuck is part of the signature: another hang of the
        # same primitive is another bug, not this one filed again.
        stuck = f", in {at}" if (at := _innermost_frame(stack)) else ""
        detail = f"{how}{where}{stuck}"
        crash = findings.Crash(case, path, symptom, detail,
                               primitive=_primitive_at(case, path, stack),
                               limit_s=self.config.case_timeout_s if symptom == "timeout" else None)
        try:
            finding, new = filing.record(
                crash, corpus_dir=self.config.corpus_dir, reports_dir=self.config.reports_dir,
                minimize=False, verify=False)   # re-running it would kill us too
        except Exception as e:  # noqa: BLE001 - a finding we could not file is a campaign error
            self.errors.append(f"could not file a {symptom} of worker {slot.index}: "
                               f"{type(e).__name__}: {e}")
            return
        self.died_on.append({"symptom": symptom, "path": path, "phase": slot.phase,
                             "valid": case.valid, "devices": case.devices,
                             "finding": finding.id, "case": serialize.to_data(case)})
        self._exposed(finding.id, "new" if new else "filed before", now, self.cases + 1)
        self._add_finding({"id": finding.id, "signature": finding.signature, "new": new,
                           "status": finding.status, "oracle": "crash", "primitive": crash.primitive,
                           "symptom": symptom,
                           "path": path, "known": None, "message": detail,
                           "stack": stack[:2000]}, now)   # innermost frames first

    def _inflight(self, slot: Slot):
        try:
            with open(workers.inflight_path(self.state_dir, slot.index)) as f:
                data = json.load(f)
            return serialize.from_data(data["case"]), data["seq"]
        except (OSError, ValueError, KeyError, serialize.CaseFormatError):
            return None, 0

    def _fault_stack(self, slot: Slot) -> str:
        try:
            with open(workers.fault_path(self.state_dir, slot.index)) as f:
                return f.read()
        except OSError:
            return ""

    def _kill(self, slot: Slot, reason: str):
        if slot.proc is None or slot.kill_reason:
            return
        slot.kill_reason = reason
        if reason in ("timeout", "oom"):   # its Python stack, into the fault file
            try:
                os.kill(slot.proc.pid, signal.SIGUSR1)
                time.sleep(0.3)
            except ProcessLookupError:
                return
        try:
            os.killpg(slot.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    # -- the loop ---------------------------------------------------------
    def _stop(self, reason: str, now: float):
        if self.stop_reason:
            return
        self.stop_reason, self.stop_deadline = reason, now + GRACE_S
        for slot in self.slots:
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.send_signal(signal.SIGTERM)

    def _enough_cases(self) -> bool:
        return self.config.max_cases is not None and self.cases >= self.config.max_cases

    def _watch(self, slot: Slot, now: float):
        if slot.kill_reason:
            return   # on its way out; keep what it was killed for
        limit = {"case": self.config.case_timeout_s,
                 "filing": self.config.filing_timeout_s}.get(slot.phase,
                                                               max(120.0, 4 * self.config.case_timeout_s))
        if now - slot.phase_since > limit:
            self._kill(slot, "timeout")
        slot.rss_mb = rss_mb(slot.proc.pid)
        self.peak_rss_mb = max(self.peak_rss_mb, slot.rss_mb)
        if self.config.max_rss_mb and slot.rss_mb > self.config.max_rss_mb:
            self._kill(slot, "oom")

    def run(self) -> dict:
        os.makedirs(self.state_dir, exist_ok=True)
        self.start = now = time.monotonic()
        self.started_at = time.time()
        deadline = now + self.config.budget_s
        handlers = {s: signal.signal(s, lambda signum, frame: setattr(
            self, "_signal", signal.Signals(signum).name)) for s in (signal.SIGINT, signal.SIGTERM)}
        self._signal = None
        try:
            for slot in self.slots:
                self._spawn(slot, now)
            next_sample = next_save = now
            sample_every = SAMPLE_EVERY_S
            while True:
                for key, _ in self.selector.select(timeout=0.25):
                    self._read(key.data, time.monotonic())
                now = time.monotonic()
                for slot in self.slots:
                    if slot.proc is not None and slot.proc.poll() is not None:
                        self._exited(slot, now)
                    elif slot.proc is not None:
                        self._watch(slot, now)
                if self._signal:
                    self._stop(self._signal, now)
                elif now >= deadline:
                    self._stop("budget", now)
                elif self._enough_cases():
                    self._stop("max_cases", now)
                live = [s for s in self.slots if s.proc is not None]
                if self.stop_reason and now > self.stop_deadline:
                    for slot in live:
                        self._kill(slot, "stop")
                if now >= next_sample:
                    self._sample(now)
                    if len(self.timeline) > MAX_SAMPLES:   # hours-long runs stay small
                        del self.timeline[::2]
                        sample_every *= 2
                    next_sample = now + sample_every
                if self.progress:
                    self.progress(self)
                if now >= next_save:
                    self._save(now)
                    next_save = now + SAVE_EVERY_S
                if self.stop_reason and not live:
                    break
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
            for slot in self.slots:   # on a supervisor error: leave no orphans
                if slot.proc is not None and slot.proc.poll() is None:
                    os.killpg(slot.proc.pid, signal.SIGKILL)
        self._finish_filing()
        now = time.monotonic()
        self._sample(now)
        return self._save(now)

    def _finish_filing(self):
        """Minimize and verify what the workers filed unverified as they
        stopped, within ``finish_filing_s`` (off the fuzzing budget); what
        is left stays unverified, and the summary says how much."""
        start, done = time.monotonic(), 0
        pending = dict.fromkeys(f["id"] for f in self.findings if f.get("status") == "unverified"
                                and f.get("oracle") != "crash")
        for fid in pending if self.config.verify else ():
            if time.monotonic() - start > self.config.finish_filing_s:
                break
            finished = filing.complete(fid, corpus_dir=self.config.corpus_dir,
                                       reports_dir=self.config.reports_dir)
            if finished is not None:
                finding, new = finished
                for f in self.findings:   # (one id may be listed as found and as seen again)
                    if f["id"] == fid:
                        f.update(id=finding.id, status=finding.status, new=f["new"] and new)
                done += 1
        self.finished_filing = {"seconds": round(time.monotonic() - start, 1), "completed": done,
                                "left_unverified": sum(f.get("status") == "unverified"
                                                       for f in self.findings)}
        # (a crash or hang filed by the supervisor is verified by `report --all`,
        # which runs its reproducer in a fresh interpreter)

    def _sample(self, now: float):
        total = sum(s.rss_mb for s in self.slots if s.proc is not None)
        if self.rss_start_mb is None and all(s.phase != "starting" for s in self.slots):
            self.rss_start_mb = round(max(s.rss_mb for s in self.slots), 1)
        # Distinct findings hit so far, by their kind at the first hit (the
        # `exposure` table): known ones and hits of filed ones, which are
        # counted rather than filed, too ("findings" and "new": filed ones).
        exposed = collections.Counter(x["kind"] for x in self.exposure.values())
        self.timeline.append({
            "t": round(now - self.start, 1), "cases": self.cases,
            "findings": len(self.findings),
            "new": sum(1 for f in self.findings if f["new"]),
            "exposed": len(self.exposure), "exposed_new": exposed["new"],
            "exposed_filed_before": exposed["filed before"], "exposed_known": exposed["known"],
            "rules": len(self.rules),
            "transform_rules": len(self.transform_rules),
            "rss_mb": round(total, 1),
            "worker_rss_mb": {s.index: round(s.rss_mb, 1) for s in self.slots
                              if s.proc is not None and not s.kill_reason},
            "worker_cases": {s.index: s.cases + sum(r[2] for r in self.retired if r[0] == s.index)
                             for s in self.slots}})

    def _save(self, now: float) -> dict:
        summary = self.summary(now)
        outputs.write_all(self.config.out_dir, summary)
        return summary

    def summary(self, now: float) -> dict:
        elapsed = now - self.start
        per_worker = collections.defaultdict(lambda: [0, 0.0, 0.0])
        rows = self.retired + [(s.index, s.generation, s.cases, s.busy_s, now - s.started)
                               for s in self.slots if s.proc is not None]
        for index, _, cases, busy, alive in rows:
            w = per_worker[index]
            w[0] += cases
            w[1] += busy
            w[2] += alive
        new = [f for f in self.findings if f["new"]]
        flaky = [f for f in self.findings if f.get("status") == "flaky"]
        return {
            "schema": 1, "jax": jax.__version__, "python": sys.version.split()[0],
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started_at)),
            "seconds": round(elapsed, 1), "stopped_by": self.stop_reason,
            "config": {**asdict(self.config), "seed": self.seed},
            "cases": self.cases,
            "cases_per_s": round(self.cases / elapsed, 2) if elapsed else 0.0,
            "cases_per_path": dict(self.per_path), "not_applicable_per_path": dict(self.skipped),
            "cases_per_oracle": dict(self.compared),
            "triggers": self.triggers,
            "failures_per_oracle": self._per_oracle(),
            "undefined_cases": self.undefined,
            "unmasked_cases": self.unmasked, "projected_cases": self.projected,
            "verdicts": dict(self.verdicts),
            "cases_per_mesh": dict(self.meshes),
            "unsupported": dict(self.unsupported), "artifacts": dict(self.artifacts),
            "finished_filing": self.finished_filing,
            "findings": {"new": new, "flaky": flaky,
                         "seen_again": [f for f in self.findings
                                        if not f["new"] and f not in flaky],
                         "known": dict(self.known), "fixed": self.fixed},
            "coverage": {**_coverage("", self.rules, self.rules_all),
                         **_coverage("transform_", self.transform_rules,
                                     self.transform_rules_all)},
            "workers": {str(i): {"cases": w[0], "busy_s": round(w[1], 1),
                                 "cases_per_s": round(w[0] / w[2], 2) if w[2] else 0.0}
                        for i, w in sorted(per_worker.items())},
            "restarts": dict(self.restarts),
            "died_on": self.died_on,
            "exposure": sorted(self.exposure.values(), key=lambda x: x["t"]),
            "rss_mb": {"worker_start": self.rss_start_mb, "worker_peak": round(self.peak_rss_mb, 1),
                       "worker_last": self._last_rss(),
                       "supervisor_peak": round(_own_peak_rss_mb(), 1)},
            "warnings": self.warnings, "errors": self.errors,
            "timeline": self.timeline,
            "exit_code": 2 if self.errors else 1 if new else 0,
        }

    def _last_rss(self) -> dict:
        """Each worker place's last resident memory seen while it was running."""
        last = {}
        for point in self.timeline:
            last.update({k: v for k, v in point["worker_rss_mb"].items() if v})
        return last

    def _per_oracle(self) -> dict:
        table = collections.defaultdict(collections.Counter)
        for f in self.findings:
            kind = "new" if f["new"] else "flaky" if f.get("status") == "flaky" else "seen_again"
            table[f["oracle"]][kind] += 1
        for oracle, n in self.already.items():
            table[oracle]["hits_of_filed"] += n
        return {k: dict(v) for k, v in table.items()}


def _coverage(prefix: str, ran: set[str], registered: set[str]) -> dict:
    """The rules of one kind that ran, and why each of the others did not."""
    not_run = sorted(registered - ran)
    return {f"{prefix}rules_run": sorted(ran), f"{prefix}rules_total": len(registered),
            f"{prefix}rules_not_run": not_run,
            f"{prefix}why_not_run": {r: why_not_run(r) for r in not_run}}


def _innermost_frame(stack: str) -> str | None:
    """Where a dead worker's thread was, from faulthandler's stack of it
    (innermost frame first): "tpu_info.py:_get_tiling_factor", its file's
    name only, which stays when a release moves the file (0.11 moved that
    one out of jax/_src/pallas/mosaic/); a line of the kernel's own is "the
    kernel"; None without a stack."""
    m = re.search(r'File "([^"]+)", line \d+ in (\S+)', stack)
    if m is None:
        return None
    file, function = m.groups()
    if file.startswith("<discharge-fuzz kernel"):
        return "the kernel"
    return f"{os.path.basename(file)}:{function}"


def _primitive_at(case, path: str, stack: str) -> str:
    """The primitive a dead worker was at, from its stack (innermost frame
    first): a discharge rule's (``_semaphore_signal_discharge_rule``), else
    the kernel statement's whose line ``path``'s program was running; "?"."""
    rules = {str(p) for p in compat.discharge_rules()}
    for name in re.findall(r"line \d+ in (\w+)", stack):
        if (m := re.fullmatch(r"_?(\w+?)_(?:partial_)?discharge(?:_rule)?", name)) \
                and m.group(1) in rules:
            return m.group(1)
    for line in re.findall(rf'File "<discharge-fuzz kernel {path} \d+>", line (\d+)', stack):
        try:
            where = paths.program(case, path)[1]
        except ValueError:
            return "?"
        if (n := where.get(int(line))) is not None:
            return case.statements[n].primitive
    return "?"


def _own_peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

"""Campaign workers: separate processes that draw cases and check them, so
whatever JAX does to a process (segfault, abort, out of memory, hang) costs
one worker, never the campaign.

A worker is ``python -m fuzz.campaign.workers CONFIG_JSON``. It reports to the
supervisor through one pipe, as JSON lines (``Channel``). Before each case it
writes the case to its in-flight file (atomically), so a worker that dies
leaves behind the case that killed it; faulthandler writes the Python stack
of a fatal signal (or of SIGUSR1, sent before a hung worker is killed) next to
it. SIGTERM asks the worker to stop after the current case, filing whatever
it found first. On Linux the kernel SIGKILLs a worker whose supervisor dies
(`die_with_parent`), in a case or not.

This module imports only the standard library and `fuzz.atomic` at its top:
the worker installs its SIGTERM handler before it imports JAX (``main``), and
``discharge-fuzz run`` imports `load_hook` from here at start-up.
"""
from __future__ import annotations

import ctypes
import faulthandler
import functools
import importlib
import json
import os
import signal
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field

from fuzz import atomic
from fuzz.campaign import DEFAULT_FILING, DEFAULT_PROJECT, DEFAULT_SCHEDULE, DEFAULT_UNMASK
from fuzz.exits import EXIT_BROKEN, EXIT_OOM, EXIT_SETUP

RUN_EXAMPLES = 500    # Hypothesis examples per run: a fresh run (new seed) keeps
                      # Hypothesis' in-memory search tree, and so memory, bounded
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


@dataclass
class WorkerConfig:
    index: int
    generation: int
    mode: str                        # "hypothesis" | "atheris"
    seed: int
    strategies: list[str]   # some of `fuzz.campaign.STRATEGIES`
    state_dir: str
    corpus_dir: str
    reports_dir: str
    database: str | None
    events_fd: int
    paths: list[str] | None = None
    oracles: list[str] | None = None
    schedule: str = DEFAULT_SCHEDULE   # `fuzz.campaign.SCHEDULES`
    filing: str = DEFAULT_FILING       # `fuzz.campaign.FILINGS`
    unmask: bool = DEFAULT_UNMASK
    project: bool = DEFAULT_PROJECT
    include_known: bool = False
    unsupported_are_findings: bool = False
    minimize: bool = True
    verify: bool = True
    clear_caches_every: int = 100
    recycle_after: int = 2000
    max_cases: int | None = None
    # Replay the corpus first, from this file on (one worker does; None: not).
    replay_from: int | None = None
    seeded: bool = False             # --seed given: Hypothesis runs are seeded too
    setup: list[str] = field(default_factory=list)   # "module:function" hooks
    # Known findings whose triggers to count (`property.count_triggers`).
    triggers: list[str] = field(default_factory=list)
    parent: int | None = None        # the supervisor's pid (`die_with_parent`)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    def inflight_path(self) -> str:
        return inflight_path(self.state_dir, self.index)

    def fault_path(self) -> str:
        return fault_path(self.state_dir, self.index)


def inflight_path(state_dir, index) -> str:
    """The case a worker is running (JSON: seq, case), written before it runs."""
    return os.path.join(state_dir, f"worker-{index}.inflight.json")


def fault_path(state_dir, index) -> str:
    """Where faulthandler writes a worker's Python stack when it dies or hangs."""
    return os.path.join(state_dir, f"worker-{index}.fault.txt")


def die_with_parent(parent: int | None) -> None:
    """Have the kernel SIGKILL this process when its parent dies (Linux's
    parent-death signal; elsewhere a no-op, and `Worker.run_case` notices
    between cases), then exit at once if ``parent`` is gone already (it died
    before the prctl call: the process was reparented).

    The signal fires when the parent *thread* that started this process ends:
    the supervisor starts workers in `Campaign.run`, on its main thread (it
    sets signal handlers, which only the main thread may), and they are gone
    when it returns."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass   # no prctl to call: the check between cases remains
    if parent is not None and os.getppid() != parent:
        os._exit(0)


def die_with_me_prelude() -> str:
    """`die_with_parent` as Python for a child of this worker to run first
    (the interpreter that verifies a reproducer, `filing.record`'s
    ``verify_prelude``; nothing of this checkout is importable there), so
    that it dies with the worker instead of running on alone."""
    return ("import ctypes, os, signal, sys\n"
            "if sys.platform.startswith('linux'):\n"
            f"    ctypes.CDLL(None).prctl({PR_SET_PDEATHSIG}, signal.SIGKILL, 0, 0, 0)\n"
            f"if os.getppid() != {os.getpid()}:\n"
            "    os._exit(0)\n")


class Channel:
    """JSON lines to the supervisor; a vanished supervisor ends the worker."""

    def __init__(self, fd: int):
        self._out = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, event: str, **data):
        try:
            self._out.write(json.dumps({"e": event, **data}) + "\n")
        except (BrokenPipeError, OSError):
            os._exit(0)


# Why the worker is to stop, set from anywhere (the SIGTERM handler is
# installed before JAX is imported, so a stop during start-up is a stop too).
stop_reason: list[str] = []
_filing: list[bool] = []     # non-empty while a finding is being minimized / verified


def _on_sigterm(signum, frame):
    stop_reason.append("stop")
    if _filing:
        raise Stop()   # cut a minimization short: the finding is filed as it is


class Stop(BaseException):
    """Raised inside a test to end the Hypothesis run: not a failure."""


def load_hook(spec: str):
    """``module:function`` -> the function (imported, not executed as text)."""
    module, _, name = spec.partition(":")
    if not module or not name:
        raise ValueError(f"--worker-setup {spec!r}: expected module:function")
    return getattr(importlib.import_module(module), name)


class Worker:
    def __init__(self, config: WorkerConfig, channel: Channel):
        from fuzz.campaign import property as prop  # heavy: not at import (see the docstring)
        from fuzz.campaign.database import open_database  # heavy: not at import (see the docstring)
        from fuzz.triage import filing, findings  # heavy: not at import (see the docstring)
        from fuzz.campaign.schedule import Scheduler  # heavy: not at import (see the docstring)
        self.config, self.channel = config, channel
        self._property, self._findings, self._filing = prop, findings, filing
        self.cases = 0
        self.schedule = Scheduler(config.seed, config.schedule, config.paths, config.oracles)
        self.pending: dict[str, object] = {}   # signature -> latest unfiled failure
        self.filed = prop.filed_signatures(
            config.corpus_dir, lambda message: channel.send("warning", message=message))
        self._database = open_database(config.database) if config.database else None
        self.rules_seen: set[str] = set()
        # rules first run since the last "done" event, by its key: discharge
        # rules, and get / swap / addupdate's transformation rules
        self._new_rules = {"rules": [], "transform_rules": []}
        # Without a parent-death signal (not Linux) a dead supervisor is
        # noticed here, between cases.
        self._parent = config.parent or os.getppid()

    # -- one case ---------------------------------------------------------
    def run_case(self, case, *, everything=False):
        """The body of the campaign's test: check ``case`` (on every path
        and oracle with ``everything``, else as the schedule plans), report,
        keep failures pending until filed."""
        if stop_reason or os.getppid() != self._parent:
            raise Stop()
        from fuzz import oracles, serialize  # heavy: not at import (see the docstring)
        seq = self.cases + 1
        atomic.write_text(self.config.inflight_path(),
                          json.dumps({"seq": seq, "case": serialize.to_data(case)}))
        self.channel.send("start", seq=seq)
        stats = self._property.Stats()
        plan = self.schedule.plan(case, everything=everything)
        start = time.perf_counter()
        try:
            return self._property.check_property(
                case, stats, self.config.include_known, on_paths=plan.paths,
                only_oracles=plan.oracles, already_found=self._already_found,
                unmask=self.config.unmask, project=self.config.project,
                unsupported_are_findings=self.config.unsupported_are_findings)
        except oracles.OracleFailure as f:
            self.pending[self._findings.signature(f)] = f
            raise
        finally:
            self.cases = seq
            if self.config.triggers:
                self._property.count_triggers(case, stats, self.config.triggers)
            self.schedule.ran(case, plan, worked={
                *(p for p, n in stats.cases.items() if n), *(o for o, n in stats.compared.items() if n)})
            self.channel.send(
                "done", seq=seq, s=round(time.perf_counter() - start, 4),
                paths={p: n for p, n in stats.cases.items() if p != "case"},
                skipped=dict(stats.skipped), known=dict(stats.known),
                already=dict(stats.already_found), **self._new_rules,
                undefined=stats.undefined, unmasked=stats.unmasked, projected=stats.projected,
                verdicts=dict(stats.verdicts),
                meshes=dict(stats.meshes),
                unsupported=dict(stats.unsupported), artifacts=dict(stats.artifacts),
                compared=dict(stats.compared), hits=stats.hits, triggers=stats.triggers)
            self._new_rules = {kind: [] for kind in self._new_rules}
            self._maintain()

    def _already_found(self, failure) -> bool:
        return self._findings.signature(failure) in self.filed

    def count_rule_calls(self) -> dict[str, list[str]]:
        """Coverage: which discharge rules, and which batching, JVP and
        transpose rules of get, swap and addupdate, ran (wrapped once; the
        probes wrap these wrappers again per case and restore them
        afterwards). Returns every registered rule, by "ready" event key."""
        from fuzz import compat  # heavy: not at import (see the docstring)
        from fuzz.oracles import probes  # heavy: not at import (see the docstring)
        rules = compat.discharge_rules()
        for prim, rule in list(rules.items()):
            # A crash inside names the rule (`supervisor._primitive_at`), even
            # when a planted wrapper kills it before JAX's own rule runs.
            rules[prim] = probes.counted(rule, functools.partial(self._ran, "rules", prim.name),
                                         frame=f"{prim.name}_discharge_rule")
        transforms = compat.transformation_rules()
        for name, (table, prim) in transforms.items():
            table[prim] = probes.counted(table[prim],
                                         functools.partial(self._ran, "transform_rules", name))
        return {"rules_all": sorted(prim.name for prim in rules),
                "transform_rules_all": sorted(transforms)}

    def _ran(self, kind, name):
        if name not in self.rules_seen:
            self.rules_seen.add(name)
            self._new_rules[kind].append(name)

    def _maintain(self):
        import jax  # heavy: not at import (see the docstring)
        if self.cases % self.config.clear_caches_every == 0:
            jax.clear_caches()   # traced programs pile up in JAX's caches
        if stop_reason:
            return
        if self.config.max_cases is not None and self.cases >= self.config.max_cases:
            stop_reason.append("max_cases")
        elif self.cases >= self.config.recycle_after:
            stop_reason.append("recycle")

    # -- filing -----------------------------------------------------------
    def file(self, failure, *, minimize: bool):
        """File ``failure`` (once per signature): minimized and verified here,
        or, with ``filing`` "end", as it is, for the campaign to complete
        after the workers stop."""
        sig = self._findings.signature(failure)
        self.pending.pop(sig, None)
        if sig in self.filed:
            return
        self.filed.add(sig)
        self.channel.send("filing", signature=sig)
        dirs = {"corpus_dir": self.config.corpus_dir, "reports_dir": self.config.reports_dir}
        try:
            _filing.append(True)
            now = self.config.filing == "inline" and not stop_reason
            finding, new = self._filing.record(
                failure, **dirs, minimize=minimize and self.config.minimize and now,
                verify=self.config.verify and now, verify_prelude=die_with_me_prelude())
        except Stop:
            _filing.clear()
            finding, new = self._filing.record(failure, **dirs, minimize=False, verify=False)
        finally:
            _filing.clear()
        self.channel.send("finding", id=finding.id, signature=sig, new=new,
                          status=finding.status,
                          oracle=finding.oracle, primitive=finding.primitive,
                          symptom=finding.symptom, path=getattr(failure, "path", "?"),
                          known=finding.known, message=finding.message[:300])

    def file_pending(self):
        """File failures seen but not yet filed (a shrink cut short)."""
        for failure in list(self.pending.values()):
            self.file(failure, minimize=False)

    # -- the loops --------------------------------------------------------
    def test(self, *, phases=None):
        from hypothesis import Phase  # heavy: not at import (see the docstring)
        # Filed at the end, a failure is minimized there: not shrunk here.
        shrink = (Phase.shrink,) if self.config.filing == "inline" else ()
        return self._property.campaign_test(
            self.run_case, self.config.strategies, database=self._database,
            max_examples=RUN_EXAMPLES,
            phases=phases or (Phase.explicit, Phase.reuse, Phase.generate, *shrink))

    def replay_corpus(self):
        self._property.replay_corpus(
            self.config.corpus_dir, lambda case: self.run_case(case, everything=True),
            on_failure=lambda f: self.file(f, minimize=True),
            on_fixed=lambda entry: self.channel.send("fixed", id=entry.meta["id"]),
            on_warning=lambda message: self.channel.send("warning", message=message),
            start=self.config.replay_from,
            on_entry=lambda n: self.channel.send("replaying", at=n))
        self.channel.send("replaying", at=None)

    def hypothesis_loop(self):
        from hypothesis.errors import HypothesisException  # heavy: not at import (see the docstring)
        from fuzz import oracles  # heavy: not at import (see the docstring)
        runs = 0
        while not stop_reason:
            # Unseeded unless --seed was given: Hypothesis turns the example
            # database off for a seeded test, and the database is what a
            # campaign resumes from. A seeded campaign repeats its draws instead.
            test = self.test()
            if self.config.seeded:
                from hypothesis import seed  # heavy: not at import (see the docstring)
                test = seed(self.config.seed + runs)(test)
            runs += 1
            try:
                test()
            except Stop:
                pass
            except BaseException as e:  # noqa: BLE001 - sorted below
                for leaf in self._property.leaves(e):
                    if isinstance(leaf, Stop):
                        continue
                    if isinstance(leaf, HypothesisException):   # e.g. a flaky case: the
                        self.channel.send("warning", message=(  # next run goes on
                            f"worker {self.config.index}: {type(leaf).__name__}: "
                            f"{str(leaf).splitlines()[0] if str(leaf) else ''}"[:300]))
                        continue
                    if not isinstance(leaf, oracles.OracleFailure):
                        raise leaf
                    self.file(leaf, minimize=True)   # Hypothesis shrank it; now the IR
            self.file_pending()

    def atheris_loop(self):
        from fuzz.campaign import atheris_harness  # heavy: not at import (see the docstring)
        self._property.replay_database(self.test(phases=self._property.REPLAY),
                                       lambda f: self.file(f, minimize=True))
        atheris_harness.fuzz(self.test(), on_failure=lambda f: self.file(f, minimize=True),
                             on_error=self.broken,
                             should_stop=lambda: bool(stop_reason), on_stop=self.exit,
                             stop_exception=Stop, seed=self.config.seed,
                             corpus_dir=os.path.join(self.config.state_dir, "atheris-corpus"),
                             artifact_dir=self.config.state_dir)

    def broken(self, error: BaseException):
        """The fuzzer itself raised: say so in one line and exit."""
        self.channel.send("error", message=one_line(error))
        self.exit(EXIT_BROKEN)

    def exit(self, code=0):
        self.file_pending()
        self.channel.send("bye", reason=stop_reason[0] if stop_reason else "done", cases=self.cases)
        sys.stdout.flush()
        os._exit(code)


def one_line(error: BaseException) -> str:
    """``error`` as one line: its type, the first line of its message and
    where it was raised. (The last line of a multi-line message, which the
    supervisor printed before, can be a lone ")".)"""
    first = next((line for line in str(error).splitlines() if line.strip()), "").strip()
    frames = traceback.extract_tb(error.__traceback__)
    where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
    return f"{type(error).__name__}: {first}"[:500] + where


def main(argv=None) -> None:
    config = WorkerConfig(**json.loads((argv or sys.argv[1:])[0]))
    die_with_parent(config.parent)   # first: a worker never outlives its supervisor
    channel = Channel(config.events_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the supervisor decides when to stop
    signal.signal(signal.SIGTERM, _on_sigterm)
    os.makedirs(config.state_dir, exist_ok=True)
    fault = open(config.fault_path(), "w")
    faulthandler.enable(fault, all_threads=True)
    faulthandler.register(signal.SIGUSR1, fault, all_threads=True)
    try:
        # JAX, and the property, only now: the SIGTERM handler is in place, and
        # a failure to import is a setup error (one line to the supervisor).
        import fuzz.campaign.property  # noqa: F401 - heavy: not at import (see the docstring)
        if config.mode == "atheris":
            from fuzz.campaign import atheris_harness  # heavy: not at import (see the docstring)
            atheris_harness.instrument_discharge_modules()
        for spec in config.setup:
            load_hook(spec)()
        worker = Worker(config, channel)
        registered = worker.count_rule_calls()
    except Exception as e:  # noqa: BLE001 - one line to the supervisor
        channel.send("error", message=f"worker setup: {type(e).__name__}: {e}")
        os._exit(EXIT_SETUP)

    channel.send("ready", pid=os.getpid(), **registered)
    try:
        if config.replay_from is not None:
            worker.replay_corpus()
        if not stop_reason:
            (worker.atheris_loop if config.mode == "atheris" else worker.hypothesis_loop)()
    except Stop:
        pass
    except MemoryError:
        os._exit(EXIT_OOM)
    except Exception as e:  # noqa: BLE001 - the fuzzer's own bug
        worker.broken(e)
    worker.exit(0)


if __name__ == "__main__":
    main()

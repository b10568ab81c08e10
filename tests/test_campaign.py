"""The nightly campaign, end to end: real worker processes on real JAX with
bugs planted in the workers (tests/campaign_plants.py). Each campaign runs for
seconds in tmp dirs."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.internal.reflection import function_digest

from fuzz import exits, ir, paths, serialize
from fuzz.campaign import outputs, run_command, supervisor, workers
from fuzz.campaign.property import REPLAY, campaign_test
from fuzz.ops.semaphore import Signal, Wait
from fuzz.triage import corpus, findings

TESTS = Path(__file__).parent


def campaign_argv(tmp, *extra, budget="15s", seed="1"):
    """A seeded campaign (its draws repeat, and it uses no example database)
    unless ``seed`` is None."""
    return [sys.executable, "-m", "fuzz.cli", "run", "--budget", budget, "--workers", "1",
            "--corpus", str(tmp / "corpus"), "--reports", str(tmp / "reports"),
            "--out", str(tmp / "out"), "--database", str(tmp / "db"), "--no-verify",
            *(["--seed", seed] if seed else []), "--paths", "abstract", *extra]


def env(tmp):
    return {**os.environ, "CAMPAIGN_PLANTS_DIR": str(tmp), "PYTHONPATH": os.pathsep.join(
        [str(TESTS), os.environ.get("PYTHONPATH", "")])}


def campaign(tmp, *extra, budget="15s", seed="1"):
    start = time.monotonic()
    done = subprocess.run(campaign_argv(tmp, *extra, budget=budget, seed=seed), env=env(tmp),
                          cwd=tmp,
                          capture_output=True, text=True, timeout=180)
    summary = json.loads((tmp / "out" / "summary.json").read_text())
    return done, summary, time.monotonic() - start


def worker_logs(tmp, tail=3000) -> str:
    """The end of each worker's stdout and stderr (for a failing test's message:
    once, 0.11.2's atheris worker exited 77 while filing, and why was lost)."""
    return "\n".join(f"--- {p.name}\n" + p.read_text(errors="replace")[-tail:]
                     for p in sorted((tmp / "out" / "state").glob("worker-*.log")))


def filed(tmp) -> set[str]:
    return {p.stem for p in (tmp / "corpus" / "regressions").glob("*.json")}


@pytest.mark.parametrize("mode", ["hypothesis", "atheris"])
def test_a_planted_bug_is_found_and_filed(tmp_path, mode):
    done, summary, _ = campaign(
        tmp_path, "--mode", mode, "--strategies", "valid",
        "--worker-setup", "campaign_plants:signal_adds_an_axis")
    assert done.returncode == 1, done.stdout + done.stderr
    new = summary["findings"]["new"]
    planted = [f for f in new if f["oracle"] in ("seed-invariant", "aval-preserved")]
    assert planted, (new, worker_logs(tmp_path))
    assert {f["id"] for f in new} <= filed(tmp_path)
    assert (tmp_path / "reports" / f"{planted[0]['id']}.md").exists()
    assert "new findings" in done.stdout
    suite = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    assert int(suite.get("failures")) == len(new)
    assert "<svg" in (tmp_path / "out" / "summary.html").read_text()
    assert not list(tmp_path.glob("crash-*")), "libFuzzer kept a stop as a crash"
    # Time to exposure: the planted bug's first hit, seconds and case number,
    # before it was filed (minimizing and verifying come after).
    first = {x["id"]: x for x in summary["exposure"]}[planted[0]["id"]]
    assert first["kind"] == "new" and 1 <= first["case"] <= summary["cases"]
    assert 0 < first["t"] <= planted[0]["t"]
    assert "Time to exposure" in (tmp_path / "out" / "summary.html").read_text()


def test_filed_at_the_end_a_finding_is_minimized_and_verified_after_the_workers_stop(tmp_path):
    """--filing end: the worker files a new finding as it is (no shrinking,
    no minimizing, no verifying on the fuzzing budget) and fuzzes on; the
    campaign completes it once the workers stop. Real JAX bugs, no plant:
    with --include-known, a known finding is filed as a new one."""
    # A case count, not only a budget, ends it: the seeded draws are the
    # same on a loaded machine (a 10 s budget met only a filed finding there).
    argv = [a for a in campaign_argv(tmp_path, "--strategies", "valid", "--include-known",
                                     "--filing", "end", "--finish-filing", "90s",
                                     "--max-examples", "15", budget="60s") if a != "--no-verify"]
    done = subprocess.run(argv, env=env(tmp_path), cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    new = summary["findings"]["new"]
    assert new, done.stdout + done.stderr
    finished = summary["finished_filing"]
    assert finished["completed"] >= 1, (finished, done.stdout)
    assert "filing after the workers stopped" in done.stdout
    assert finished["left_unverified"] == 0, summary["findings"]
    for f in new:   # its reproducer ran in a fresh interpreter, its case minimized
        record = json.loads((tmp_path / "reports" / f"{f['id']}.json").read_text())
        assert record["reproducer"]["status"] == "reproduces", record["reproducer"]
        assert record["minimized"], record


def done_event(seq, hits):
    """A worker's "done" event for one case that hit ``hits`` (id -> kind)."""
    return {"e": "done", "seq": seq, "s": 0.01, "paths": {"abstract": 1}, "skipped": {},
            "known": {i: 1 for i, kind in hits.items() if kind == "known"},
            "already": {"seed-invariant": 1} if "filed before" in hits.values() else {},
            "rules": [], "transform_rules": [], "undefined": 0, "unsupported": {},
            "hits": hits}


def findings_chart(page: str) -> dict[str, list[float]]:
    """The values of each line of summary.html's "Distinct findings over
    time" chart, read back from the SVG (the y axis runs from 0 to its
    label at the top)."""
    start = page.index('<svg xmlns="http://www.w3.org/2000/svg"', page.index("<p>"))
    svg = ET.fromstring(page[start:page.index("</svg>", start) + len("</svg>")])
    ns = "{http://www.w3.org/2000/svg}"
    assert svg.get("aria-label").startswith("Distinct findings over time")
    texts = svg.findall(f"{ns}text")
    zero = float(svg.find(f"{ns}line").get("y1"))
    top = float(texts[1].get("y")) - 4
    y_max = float(texts[1].text)
    lines, names = svg.findall(f"{ns}polyline"), [t.text for t in texts[5:]]
    return {name: [round(y_max * (zero - float(xy.split(",")[1])) / (zero - top), 6)
                   for xy in line.get("points").split()]
            for name, line in zip(names, lines)}


@pytest.mark.parametrize("hits", [
    [{}, {"K1": "known", "K2": "known"}, {"K1": "known", "D": "filed before"}, {"N": "new"}],
    [{}, {}, {}]])
def test_the_findings_chart_counts_every_finding_hit_known_ones_too(tmp_path, hits):
    """Issue 34: the chart counted only the findings this run filed, and
    stayed at 0 in a run that hit 33 known findings. Every distinct finding
    hit counts now, known ones and filed ones hit again as their own lines."""
    c = supervisor.Campaign(supervisor.CampaignConfig(budget_s=1, out_dir=str(tmp_path)))
    c.start, c.started_at = 100.0, time.time()
    for seq, case_hits in enumerate(hits, 1):
        c._on_event(c.slots[0], done_event(seq, case_hits), 100.0 + seq)
        c._sample(100.0 + seq)
    outputs.write_all(str(tmp_path), c.summary(100.0 + len(hits)))
    chart = findings_chart((tmp_path / "summary.html").read_text())
    if hits[1]:
        assert chart == {"new": [0, 0, 0, 1], "filed before": [0, 0, 1, 1],
                         "known": [0, 2, 2, 2]}
        assert "Distinct findings over time (4 hit)" in (tmp_path / "summary.html").read_text()
        last = json.loads((tmp_path / "summary.json").read_text())["timeline"][-1]
        assert (last["exposed"], last["exposed_known"], last["findings"]) == (4, 2, 0)
    else:
        assert chart == {name: [0, 0, 0] for name in ("new", "filed before", "known")}


def test_the_summary_adds_up_the_workers_trigger_counts(tmp_path):
    c = supervisor.Campaign(supervisor.CampaignConfig(budget_s=1, out_dir=str(tmp_path),
                                                      triggers=["K1", "K2"]))
    c.start, c.started_at = 100.0, time.time()
    for seq, triggers in enumerate([{"K1": [1, 0]}, {}, {"K1": [1, 1], "K2": [1, 0]}], 1):
        c._on_event(c.slots[0], {**done_event(seq, {}), "triggers": triggers}, 100.0 + seq)
    assert c.summary(104.0)["triggers"] == {"K1": [2, 1], "K2": [1, 0]}


def test_a_segfault_a_hang_and_a_memory_hog_become_findings_and_the_campaign_goes_on(tmp_path):
    # A wait is rare in drawn programs (seed 1's first on 0.12 is case 45;
    # 0.6.2 drew none in 60), so the corpus holds one, replayed first: the
    # hang comes on every release and machine, the other two from draws.
    corpus.write_seed(tmp_path / "corpus", "a-wait", ir.Case(
        (ir.Ref("int16", ()),), (Wait(ir.View(0), ir.Int(1)),), paths=("abstract",)), "a plant's")
    done, summary, _ = campaign(
        tmp_path, "--strategies", "valid", "--case-timeout", "3s", "--max-rss-mb", "600",
        "--worker-setup", "campaign_plants:abort_on_signal",
        "--worker-setup", "campaign_plants:hang_on_wait",
        "--worker-setup", "campaign_plants:bloat_on_get", "--max-examples", "60",
        budget="150s")
    symptoms = {f["symptom"]: f for f in summary["findings"]["new"]}
    assert {"crash", "timeout", "oom"} <= set(symptoms), done.stdout + done.stderr
    assert "SIGABRT" in symptoms["crash"]["message"]
    # each names the primitive whose discharge rule it died in
    assert [symptoms[s]["primitive"] for s in ("crash", "timeout", "oom")] == [
        "semaphore_signal", "semaphore_wait", "get"], symptoms
    assert symptoms["crash"]["path"] in ("abstract", "run_state", "pallas_call", "tpu_interpret")
    # each says where it was stuck, which signs it: the plant's own frame (the
    # memory hog's, or numpy's filling its gigabyte, as the limit is crossed)
    said = [symptoms[s]["message"] for s in ("crash", "timeout", "oom")]
    assert said[0].endswith(", in campaign_plants.py:around"), said
    assert said[1].endswith(", in campaign_plants.py:around"), said
    assert said[2].endswith((", in campaign_plants.py:around", ", in numeric.py:ones")), said
    for f in symptoms.values():  # the case it died on was saved before it ran
        regression = json.loads((tmp_path / "corpus" / "regressions" / f"{f['id']}.json").read_text())
        assert regression["case"]["refs"]
    # A fresh worker took over after each death, until the budget ran out.
    assert summary["restarts"] == {"crash": 1, "timeout": 1, "oom": 1}
    # each case a worker died on is kept, whatever finding it went to
    assert sorted(d["symptom"] for d in summary["died_on"]) == ["crash", "oom", "timeout"]
    assert all(d["valid"] and serialize.from_data(d["case"]) for d in summary["died_on"])
    assert "cases with a timeout: 1, 1 valid, on a mesh: none" in done.stdout, done.stdout
    assert {f["id"] for f in symptoms.values()} <= {x["id"] for x in summary["exposure"]}
    # It stops by its count of cases, not its budget: a slow machine or
    # release (0.9.0 under load ran 10 cases in 20 s) draws as many.
    assert summary["stopped_by"] == "max_cases" and not summary["errors"]
    assert done.returncode == 1


def test_a_worker_that_dies_replaying_the_corpus_leaves_the_rest_to_the_next(tmp_path):
    """The first corpus file hangs its worker: the next worker replays the
    files after it (before, it replayed none, and the second's bug went
    unseen)."""
    for name, shape, stmt in (("a-hangs", (7,), Wait), ("b-fails", (9,), Signal)):
        at0 = ir.View(0, (ir.At((ir.Int(0),)),))
        corpus.write_seed(tmp_path / "corpus", name, ir.Case(
            (ir.Ref("int16", shape),), (stmt(at0, ir.Int(1)),), paths=("abstract",)), "a plant's")
    done, summary, _ = campaign(
        tmp_path, "--case-timeout", "3s", "--max-examples", "4",
        "--worker-setup", "campaign_plants:hang_on_a_wait_of_7_then_lose_a_signal_of_9",
        budget="60s")
    new = summary["findings"]["new"]
    assert [f["symptom"] for f in new if f["oracle"] == "crash"] == ["timeout"], new
    lost = [f for f in new if f["oracle"] != "crash"]
    assert lost and lost[0]["primitive"] == "semaphore_signal", done.stdout + done.stderr


def test_a_dead_workers_stack_names_the_primitive_it_died_in():
    case = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(1)),
                                               Wait(ir.View(0), ir.Int(1))))
    # a discharge rule's frame, innermost first (the worker names its wrappers so)
    rule = '  File "x.py", line 3 in wrapped\n  File "y.py", line 9 in semaphore_wait_discharge_rule\n'
    assert supervisor._primitive_at(case, "pallas_call", rule) == "semaphore_wait"
    # else the kernel line the path's program was running
    line = next(n for n, k in paths.program(case, "run_state")[1].items() if k == 1)
    kernel = f'  File "<discharge-fuzz kernel run_state 7>", line {line} in kernel\n'
    assert supervisor._primitive_at(case, "run_state", kernel) == "semaphore_wait"
    assert supervisor._primitive_at(case, "run_state", "") == "?"


def test_a_hang_is_signed_by_where_it_was_stuck():
    """Two hangs of one primitive in different functions are two findings:
    a filed one does not swallow the other."""
    def stack(file, function):
        return (f'Current thread 0x00007f (most recent call first):\n  File "{file}", line 650 '
                f'in {function}\n  File "/v/site-packages/jax/_src/pallas/mosaic/pipeline.py", '
                'line 507 in get_dma_slice\n')
    tiling = stack("/v/lib/python3.12/site-packages/jax/_src/tpu_info.py", "_get_tiling_factor")
    assert supervisor._innermost_frame(tiling) == "tpu_info.py:_get_tiling_factor"
    assert supervisor._innermost_frame(stack("<discharge-fuzz kernel abstract 3>", "kernel")) \
        == "the kernel"
    assert supervisor._innermost_frame("") is None
    case = ir.Case((ir.Ref("int16", ()),), (Wait(ir.View(0), ir.Int(1)),))
    signed = {findings.signature(findings.Crash(
        case, "abstract", "timeout", f"no progress for 30s, killed, in {supervisor._innermost_frame(s)}",
        "semaphore_wait")) for s in (tiling, stack("/w/site-packages/jax/_src/core.py", "eval_jaxpr"))}
    assert len(signed) == 2


def test_sigterm_loses_nothing_and_a_restart_resumes(tmp_path):
    proc = subprocess.Popen(
        campaign_argv(tmp_path, "--strategies", "valid",
                      "--worker-setup", "campaign_plants:signal_adds_an_axis", budget="5m"),
        env=env(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 90
    while not filed(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.5)
    found_before = filed(tmp_path)
    assert found_before, "nothing found in 90s"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, out
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped_by"] == "SIGTERM"
    assert found_before <= {f["id"] for f in summary["findings"]["new"]} <= filed(tmp_path)
    assert "== campaign" in out
    assert not list(tmp_path.rglob("*.tmp")), "a half-written file was left behind"

    # Restart on the same database and corpus, with damage in both.
    bad = tmp_path / "corpus" / "regressions" / "broken-entry.json"
    bad.write_text("{not json")
    test = campaign_test(None, ["valid"], database=None, max_examples=1, phases=REPLAY)
    DirectoryBasedExampleDatabase(tmp_path / "db").save(
        function_digest(test.hypothesis.inner_test), b"\xff\x00 not a choice sequence")
    done, summary, _ = campaign(   # unseeded, so it reads the damaged database
        tmp_path, "--strategies", "valid", "--no-minimize", "--max-examples", "30",
        "--worker-setup", "campaign_plants:signal_adds_an_axis", budget="60s", seed=None)
    assert summary["cases"] >= 30, done.stdout + done.stderr
    # It resumed: what was filed is replayed first and counted, not filed again.
    assert sum(o.get("hits_of_filed", 0) for o in summary["failures_per_oracle"].values()) >= 1
    assert not found_before & {f["id"] for f in summary["findings"]["new"]}
    assert any("broken-entry.json" in w for w in summary["warnings"])
    kinds = {x["id"]: x["kind"] for x in summary["exposure"]}
    assert any(kinds.get(fid) == "filed before" for fid in found_before), summary["exposure"]


LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the parent-death signal is Linux's")


def alive(pid) -> bool:
    """Running, not a zombie (an orphan's zombie lingers where nothing reaps)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


@LINUX_ONLY
def test_workers_die_with_their_supervisor_even_in_a_case(tmp_path):
    """A `kill -9` of the supervisor kills its workers within seconds, in the
    middle of an hour-long case (before, a worker noticed a dead supervisor
    only between cases: `python -m fuzz.bench_campaign orphans 10` found a
    worker alive 3 s later after 4 of 10 kills, on unpatched JAX)."""
    proc = subprocess.Popen(
        campaign_argv(tmp_path, "--workers", "2", "--case-timeout", "1h",
                      "--worker-setup", "campaign_plants:sleep_in_every_case", budget="5m"),
        env=env(tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids = []
    try:
        deadline = time.monotonic() + 120
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            pids = [int(p.name.rsplit("-", 1)[1]) for p in tmp_path.glob("in-a-case-*")]
        assert len(pids) == 2, (proc.poll(), worker_logs(tmp_path))
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 3
        while any(map(alive, pids)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if alive(p)], "workers outlived their supervisor"
    finally:
        proc.kill()
        for pid in pids:   # each leads its own process group
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@LINUX_ONLY
def test_a_reproducer_a_worker_verifies_dies_with_the_worker_too():
    """The prelude the worker gives the verifying interpreter sets its
    parent-death signal (PR_GET_PDEATHSIG is 2)."""
    from fuzz.campaign import workers
    get = ("import ctypes; n = ctypes.c_int()\n"
           "ctypes.CDLL(None).prctl(2, ctypes.byref(n), 0, 0, 0); print(n.value)")
    done = subprocess.run([sys.executable, "-I", "-c", workers.die_with_me_prelude() + get],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == str(int(signal.SIGKILL)), done.stderr


def test_durations_and_bad_flags():
    assert run_command.duration("90s") == 90 and run_command.duration("8h") == 8 * 3600
    assert run_command.duration("1h30m") == 5400 and run_command.duration("45") == 45
    for bad in ("", "ten", "5x", "0s"):
        with pytest.raises(Exception):
            run_command.duration(bad)


@pytest.mark.parametrize("argv, message", [
    (["run", "--budget", "soon"], "is not a duration"),
    (["run", "--paths", "nowhere"], "--paths: unknown path 'nowhere'"),
    (["run", "--oracles", "vibes"], "--oracles: unknown oracle 'vibes'"),
    (["run", "--worker-setup", "no_such_module:f"], "--worker-setup no_such_module:f"),
    (["run", "--database", "redis://127.0.0.1:1/0"], "--database"),
])
def test_bad_campaign_flags_are_one_line_and_exit_2(argv, message, capsys):
    from fuzz import cli
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    assert code == exits.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def redis_server(tmp_path):
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    pytest.importorskip("redis", reason="pip install 'discharge-fuzz[redis]'")
    port = _free_port()
    server = subprocess.Popen([binary, "--port", str(port), "--save", "", "--appendonly", "no",
                               "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    import redis
    client = redis.Redis(port=port)
    for _ in range(50):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.1)
    yield f"redis://127.0.0.1:{port}/0", client
    server.terminate()
    server.wait(timeout=10)


def test_a_campaign_shares_its_database_through_redis(tmp_path, redis_server):
    url, client = redis_server
    done, summary, _ = campaign(   # unseeded: a seeded Hypothesis test has no database
        tmp_path, "--database", url, "--strategies", "valid", "--no-minimize",
        "--worker-setup", "campaign_plants:signal_adds_an_axis", seed=None)
    assert summary["findings"]["new"], done.stdout + done.stderr
    # Hypothesis saved the failing examples in Redis (SADD), where other
    # machines replay them; once filed, they leave it again (SREM).
    assert "cmdstat_sadd" in client.info("commandstats"), client.info("commandstats")


HARNESS_FILING_BREAKS = """
import os, sys
from fuzz.campaign import atheris_harness
from fuzz.oracles.invariants import SeedInvariantViolation
class Test:   # stands in for a Hypothesis test: every input fails an oracle
    class hypothesis:
        @staticmethod
        def fuzz_one_input(data):
            raise SeedInvariantViolation("planted", primitive="?", path="abstract")
def file(failure):
    raise RuntimeError("filing broke")
def error(e):
    print("on_error:", e, flush=True)
    os._exit(3)
atheris_harness.fuzz(Test, on_failure=file, on_error=error, should_stop=lambda: False,
                     on_stop=lambda: os._exit(0), stop_exception=KeyboardInterrupt, seed=1,
                     corpus_dir=sys.argv[1], artifact_dir=sys.argv[1])
"""


def test_an_error_filing_an_atheris_failure_is_the_fuzzers_error_not_a_crash(tmp_path):
    """Before, it escaped to libFuzzer, which exits 77 as for a crash, and the
    campaign filed a bogus 'exit code 77 while filing' crash finding."""
    done = subprocess.run([sys.executable, "-c", HARNESS_FILING_BREAKS, str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(TESTS.parent)})
    assert done.returncode == 3 and "on_error: filing broke" in done.stdout, \
        (done.returncode, done.stdout[-2000:], done.stderr[-2000:])


HARNESS_SLOW_INPUT = """
import os, sys, time
from fuzz.campaign import atheris_harness
n = [0]
class Test:   # stands in for a Hypothesis test: its third input takes 1.5 s
    class hypothesis:
        @staticmethod
        def fuzz_one_input(data):
            n[0] += 1
            if n[0] == 3:
                time.sleep(1.5)
            if n[0] == 5:
                raise KeyboardInterrupt
atheris_harness.fuzz(Test, on_failure=print, on_error=lambda e: os._exit(3),
                     should_stop=lambda: False, on_stop=lambda: os._exit(0),
                     stop_exception=KeyboardInterrupt, seed=1,
                     corpus_dir=sys.argv[1], artifact_dir=sys.argv[1])
"""


def test_an_atheris_input_may_take_longer_than_a_second(tmp_path):
    """The supervisor times cases out, not atheris: with -timeout=0 atheris
    killed any input past 1 s ('Timeout: 1s elapsed, timeout=0s', exit code
    77), and the campaign filed that as a crash (0.11.1's and 0.11.2's suites)."""
    done = subprocess.run([sys.executable, "-c", HARNESS_SLOW_INPUT, str(tmp_path)],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(TESTS.parent)})
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])


def test_a_broken_worker_says_what_broke_in_one_line():
    """Its type, the first line of a multi-line message and where it was
    raised: not the message's last line (a lone ")" in a benchmark run)."""
    try:
        raise TypeError("bad case\n  Case(refs=(...),\n)")
    except TypeError as e:
        line = workers.one_line(e)
    assert line.startswith("TypeError: bad case (test_campaign.py:") and "\n" not in line, line

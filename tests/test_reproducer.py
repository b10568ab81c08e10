"""From a planted bug to a verified standalone reproducer: the whole chain.

The bug: `_transform_semaphore` ignores the view's transforms, so any indexed
semaphore view reaches discharge with the whole ref's shape."""
import dataclasses
import os

import campaign_plants
import jax
import numpy as np
import pytest

from fuzz import compat, emit, ir, oracles, paths
from fuzz.suppressions import known_findings, seen_on
from fuzz.campaign.property import run_campaign
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.ref import Swap
from fuzz.ops.ref.common import Fill
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.triage import filing, reproducer
from jax._src.pallas import primitives as pallas_primitives
from strategies.programs import programs

TESTS = os.path.dirname(__file__)

# The same patch, as source for the verifying interpreter.
PLANT_IGNORE_TRANSFORMS = (
    "from jax._src.pallas import primitives\n"
    "primitives._transform_semaphore = lambda value, transforms, aval: value\n")

# The smallest program a person would write to show it: one indexed signal.
HAND_WRITTEN_TRIGGER = ir.Case((ir.Ref("int16", (2,)),),
                               (Signal(ir.View(0, (ir.At((ir.Int(0),)),)), ir.Int(1)),))


@pytest.fixture
def ignore_transforms(monkeypatch):
    jax.clear_caches()
    monkeypatch.setattr(pallas_primitives, "_transform_semaphore",
                        lambda value, transforms, aval: value)
    yield
    monkeypatch.undo()
    jax.clear_caches()


def _size(case):
    return (len(case.body), sum(len(s.view.transforms) for s in case.body),
            len(case.refs), sum(len(s.shape) for s in case.refs))


def test_planted_bug_is_found_minimized_and_reproduced_standalone(ignore_transforms, tmp_path):
    # (the semaphore ops: a copy on an indexed DMA semaphore meets the plant
    # too, and takes two more refs to show it)
    stats = run_campaign(programs(kinds=("int16",), data_dtypes=(), max_statements=4,
                                  ops=(Signal, Wait, Read)), max_examples=60, seed=1)
    assert not stats.errors, stats.errors
    found = [f for f in stats.failures if f.oracle == "valid-runs"]
    assert found, stats.failures
    finding, new = filing.record(found[0], corpus_dir=tmp_path / "corpus",
                                   reports_dir=tmp_path / "reports",
                                   verify_prelude=PLANT_IGNORE_TRANSFORMS)
    assert new
    assert all(a <= b for a, b in zip(_size(finding.case), _size(HAND_WRITTEN_TRIGGER))), finding.case
    assert finding.reproducer["status"] == "reproduces", finding.reproducer
    assert finding.reproducer["path"] != "abstract"  # reachable through public API
    assert "_src" not in finding.reproducer["script"]
    # Without the patch, the same script says JAX is right.
    clean = reproducer.check_script(finding.reproducer["script"])
    assert (clean["status"], clean["exit_code"]) == ("does not reproduce", 0), clean
    assert (tmp_path / "corpus" / "regressions" / f"{finding.id}.json").exists()
    assert "### System info" in (tmp_path / "reports" / f"{finding.id}.md").read_text()


def test_expected_values_are_checked_when_given():
    case = ir.Case((ir.Ref("int16", ()),),
                   (Signal(ir.View(0), ir.Int(3)), Read(ir.View(0))), paths=("pallas_call",))
    right = reproducer.check_script(reproducer.script(case, "pallas_call", values=[[3]]))
    wrong = reproducer.check_script(reproducer.script(case, "pallas_call", values=[[4]]))
    assert right["exit_code"] == 0 and wrong["exit_code"] == 1, (right, wrong)
    assert "results are [[3]], expected [[4]]" in wrong["output"]


def test_abstract_reproducer_says_it_uses_internals():
    text = reproducer.script(HAND_WRITTEN_TRIGGER, "abstract")
    assert "JAX\n# internals" in text and "jax._src" in text


def test_a_reproducer_tries_the_path_the_bug_was_seen_on_and_skips_an_unknown_one():
    from fuzz.ops.dma import DmaStart, DmaWait
    data = ir.Ref("float32", (2,))
    copy = ir.Case((ir.Ref("dma", ()), data, data), (DmaStart(ir.View(1), ir.View(2), ir.View(0)),
                                                     DmaWait(ir.View(1), ir.View(2), ir.View(0))))
    # only tpu_interpret_eager's options show some bugs: it is tried before
    # the public paths the bug was not seen on
    order = reproducer.candidate_paths(copy, ["tpu_interpret_eager"])
    assert order[0] == "tpu_interpret_eager" and "pallas_call" in order
    # a dead worker whose stack named no path ("?") still gets a reproducer
    assert reproducer.candidate_paths(copy, ["?"])[0] == "pallas_call"


def test_a_hangs_reproducer_stops_itself_and_says_where_it_was_stuck():
    """Run alone, a hang's reproducer does not hang forever: its watchdog
    prints every thread's stack and exits 1; the harness calls that a hang."""
    text = (reproducer.WATCHDOG.format(limit=1) + "\n" +
            "import time\n\ndef stuck_here():\n    time.sleep(60)\n\nstuck_here()\n")
    result = reproducer.check_script(text, timeout=30)
    assert result["status"] == "timeout" and result["exit_code"] == 1, result
    assert "stuck_here" in result["output"] and result["seconds"] < 20, result
    assert reproducer.died(result)


def test_a_fatal_failures_reproducer_carries_its_watchdog():
    hang = reproducer.script(HAND_WRITTEN_TRIGGER, "run_state", fatal=True, watchdog_s=30)
    crash = reproducer.script(HAND_WRITTEN_TRIGGER, "run_state", fatal=True)
    assert "faulthandler.dump_traceback_later(30, exit=True)" in hang
    assert "faulthandler.enable()" in crash and "dump_traceback_later" not in crash
    assert "faulthandler" not in reproducer.script(HAND_WRITTEN_TRIGGER, "run_state")


@pytest.mark.skipif(not seen_on.applies("known", "tpu-interpret-ignores-dma-add"),
                    reason="the TPU interpreter does not ignore add=True here")
def test_a_wrong_value_is_not_reproduced_by_another_paths_error(tmp_path):
    """The TPU interpreter ignores add=True on a copy (a wrong value);
    pallas_call, tried first as the more public path, refuses add=True with
    NotImplementedError, its own unsupported feature. That exit 1 once
    filed the wrong value as that refusal."""
    k = known_findings.BY_ID["tpu-interpret-ignores-dma-add"]
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    finding, _ = filing.record(failure, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                               minimize=False)
    assert finding.reproducer["status"] == "reproduces", finding.reproducer
    assert finding.reproducer["path"] in ("tpu_interpret", "tpu_interpret_eager")
    assert finding.reproducer["error"] is None


def test_an_unwaited_copy_is_shown_through_the_interpreters_own_modes():
    """left-over-counts renders its comparison as a maintainer runs it: the
    same kernel under dma_execution_mode 'eager' and 'on_wait', each asked
    whether it reported a count left at kernel exit; the script runs to its
    verdict whichever way JAX answers."""
    entry = next(k for k in known_findings.KNOWN if k.id == "tpu-interpret-on-wait-drops-unwaited-copy")
    failure = oracles.class_of("left-over-counts").fail(entry.example, "dma_start", "tpu_interpret", "x")
    comparison = reproducer.comparison_of(failure, entry.example, "tpu_interpret")
    assert "pltpu.InterpretParams(dma_execution_mode=mode)" in comparison["source"]
    assert reproducer.comparison_of(failure, entry.example, "pallas_call") is None
    text = reproducer.for_failure(entry.example, "tpu_interpret", failure, comparison=comparison)
    ran = reproducer.check_script(text)
    assert ran["status"] in ("reproduces", "does not reproduce"), ran["output"]
    assert "by dma_execution_mode='eager'" in ran["output"]


def test_an_error_raised_in_a_callback_is_the_reproducers_verdict():
    """An error the TPU interpreter's callback raises surfaces only when a
    result is read (a remote copy of 64-bit data, on JAX 0.12): the
    reproducer waits for its results inside its check, so it ends with a
    verdict either way, not a traceback ("broken")."""
    entry = next(k for k in known_findings.KNOWN if k.id == "tpu-interpret-remote-copy-of-64-bit-data")
    failure = oracles.class_of("valid-runs").fail(entry.example, "?", "tpu_interpret", "x")
    ran = reproducer.check_script(reproducer.for_failure(entry.example, "tpu_interpret", failure))
    assert ran["status"] in ("reproduces", "does not reproduce"), ran["output"]


def _plain_examples():
    """A copy waited on (a semaphore program every pallas path takes, the
    race detector's too) and a ref program (jax_refs)."""
    a = ir.Ref("float32", (2,))
    copy = (ir.View(0), ir.View(1), ir.View(2))
    yield ir.Case((a, a, ir.Ref("dma", ())), (DmaStart(*copy), DmaWait(*copy)))
    yield ir.Case((ir.Ref("int32", (2,)),), (Swap(ir.View(0), Fill(ir.Int(1), (2,))),))


@pytest.mark.parametrize("path", paths.having("PLAIN"))
def test_every_plain_form_renders_and_computes_what_the_path_does(path):
    """A reproducer tries a path's plain form first: it must take the
    same arguments' meaning and return the same values."""
    case = next(c for c in _plain_examples() if not paths.not_applicable(c, path))
    plain = emit.execute(paths.program(case, path, plain=True)[0], {}, name=path)["run"]()
    full = paths.run(case, path)
    assert full.error is None, full.error
    assert [np.asarray(v).tolist() for v in plain] == [v.tolist() for v in full.values]


def test_a_reproducer_takes_the_plain_form_where_the_bug_shows_there(tmp_path):
    """jax_refs calls its kernel through jax.jit(jax.checkpoint(...)), for
    the rules they reach; a bug that shows without them is reproduced, and
    shown, as a user writes the program: the kernel called directly."""
    known = "addupdate-after-scalar-store-numpy-dtype"   # (shown on jax_refs: public)
    if not seen_on.applies("known", known):
        pytest.skip(f"JAX {jax.__version__}: {known}'s example is not bad here")
    case = dataclasses.replace(known_findings.BY_ID[known].example, paths=("jax_refs",))
    failure = next(f for f in oracles.check(case).failures if f.oracle == "model-vs-path")
    finding, _ = filing.record(failure, corpus_dir=tmp_path / "corpus",
                               reports_dir=tmp_path / "reports", minimize=False)
    repro = finding.reproducer
    assert (repro["status"], repro["path"], repro["render"]["plain"]) == (
        "reproduces", "jax_refs", True), repro
    assert "checkpoint" not in repro["script"]
    assert "checkpoint" not in (tmp_path / "reports" / f"{finding.id}.md").read_text()


def test_a_reproducer_keeps_the_paths_wrappers_where_only_they_show_the_bug(tmp_path, monkeypatch):
    """A bug planted in jax.checkpoint's discharge rule does not show in
    the plain form: the reproducer falls back to the path's own."""
    rules = compat.discharge_rules()
    prim = next(p for p in rules if p.name == "remat2")
    jax.clear_caches()
    with monkeypatch.context() as m:
        m.setitem(rules, prim, rules[prim])   # (restored as it was on exit)
        campaign_plants.remat_off_by_one()
        case = ir.Case((ir.Ref("int32", (2,)),), (Swap(ir.View(0), Fill(ir.Int(1), (2,))),),
                       ("jax_refs",))
        failure = next(f for f in oracles.check(case).failures if f.path == "jax_refs")
        finding, _ = filing.record(
            failure, corpus_dir=tmp_path / "corpus", reports_dir=tmp_path / "reports",
            minimize=False, verify_prelude=f"import sys; sys.path[:0] = {[TESTS]!r}\n"
                                           "import campaign_plants; campaign_plants.remat_off_by_one()")
    jax.clear_caches()
    repro = finding.reproducer
    assert (repro["status"], repro["path"], repro["render"]["plain"]) == (
        "reproduces", "jax_refs", False), repro
    assert "jax.checkpoint(kernel)" in repro["script"]

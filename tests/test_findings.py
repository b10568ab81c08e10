"""Signatures and dedup: one finding per bug, however it is reached."""
import jax.numpy as jnp
import pytest

from fuzz import compat, emit, ir, oracles
from fuzz.ops.ref import Get, Swap
from fuzz.ops.ref.common import Iota
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.oracles import model_vs_path
from fuzz.suppressions import known_findings, seen_on
from fuzz.triage import filing, findings, reports
from hunting import known_failure
from jax._src.pallas import primitives as pallas_primitives

signal_p, wait_p, read_p = compat.SEMAPHORE_PRIMITIVES
_REAL_TRANSFORM_SEMAPHORE = pallas_primitives._transform_semaphore


def _wait_rule_returning_int32():
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        return [None if v is None else v.astype(jnp.int32) for v in new_invals], outs
    return compat.wrap_rule(compat.discharge_rules()[wait_p], around)


def _at(*ints):
    return ir.View(0, (ir.At(tuple(ir.Int(i) for i in ints)),))


# Two programs that differ in shapes, indices, counts and statements.
ONE = ir.Case((ir.Ref("int16", (3,)),), (Signal(_at(1), ir.Int(2)),))
OTHER = ir.Case((ir.Ref("int16", (2, 4)), ir.Ref("regular", ())),
                (Signal(ir.View(1), ir.Int(1)), Signal(_at(1, 3), ir.Int(7)),
                 Read(_at(0, 0))))
WAIT = ir.Case((ir.Ref("int16", (2,)),), (Wait(_at(1), ir.Int(0)),))


def _record(case, tmp_path):
    # (the plant's failure: not a known bug of the running release)
    failure = next(f for f in oracles.check(case).failures if f.known is None)
    return filing.record(failure, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                           minimize=False, verify=False)


def test_normalize_makes_numbers_shapes_and_addresses_generic():
    a = findings.normalize("final s0 is int16[2,3] at 0x7f3a; operand 1, shape (2, 3)")
    b = findings.normalize("final s2 is int16[5] at 0x1; operand 4, shape (7,)")
    assert a == b == "final sN is int16[N] at ADDR; operand N, shape (N)"
    assert findings.normalize("int16[]") != findings.normalize("int16[1]")


def test_same_planted_bug_from_different_programs_is_one_finding(plant, tmp_path):
    plant(pallas_primitives, "_transform_semaphore", lambda value, transforms, aval: value)
    first, new_first = _record(ONE, tmp_path)
    second, new_second = _record(OTHER, tmp_path)
    assert (new_first, new_second) == (True, False)
    assert second.id == first.id and second.hits == 2 and second.status == "still failing"
    assert "jax/_src/" in first.signature and ".py:" in first.signature  # top JAX frames
    assert not any(ch.isdigit() for ch in first.signature.split("|")[3].replace("int16", ""))


def test_two_planted_bugs_are_two_findings(plant, tmp_path):
    plant(pallas_primitives, "_transform_semaphore", lambda value, transforms, aval: value)
    one, _ = _record(ONE, tmp_path)
    plant(pallas_primitives, "_transform_semaphore", _REAL_TRANSFORM_SEMAPHORE)
    plant(compat.discharge_rules(), wait_p, _wait_rule_returning_int32())
    other, new = _record(WAIT, tmp_path)
    assert new and other.id != one.id and other.oracle == "aval-preserved"
    assert sorted(p.name for p in (tmp_path / "r").glob("*.json")) == sorted(
        [f"{one.id}.json", f"{other.id}.json"])


def test_crash_has_a_signature_and_no_exception(tmp_path):
    crash = findings.Crash(ONE, "pallas_call", "timeout", "no result after 60 s")
    assert crash.oracle == "crash" and crash.primitive == "?" and crash.error is None
    assert findings.signature(crash) == findings.signature(
        findings.Crash(OTHER, "run_state", "timeout", "no result after 120 s"))
    assert crash.symptom_of() == "timeout"
    with pytest.raises(ValueError):
        findings.Crash(ONE, "pallas_call", "segfault", "")


def test_a_hang_whose_path_the_stack_did_not_say_is_filed(tmp_path):
    """The supervisor's "?" for a dead worker's path (a stack with no path
    frame) files as any crash does (its report said KeyError: '?')."""
    crash = findings.Crash(ONE, "?", "timeout", "no progress for 30s, killed")
    finding, new = filing.record(crash, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                                 minimize=False, verify=False)
    assert new and finding.paths == ("?",)
    assert "on the `?` path" in (tmp_path / "r" / f"{finding.id}.md").read_text()


def test_classification_of_known_bugs():
    failure = known_failure("check-sem-avals-last-transform-not-indexer")
    assert (failure.symptom_of(), findings.stage_of(failure)) == ("exception", "trace")
    assert known_failure("read-dtype-unchecked").symptom_of() == "missing error"


def test_two_wrong_values_alike_are_two_findings_linked(plant, tmp_path):
    def changing(change):
        def around(call, in_avals, values, params):
            new_invals, outs = call()
            return [change(values[0], new_invals[0]), *new_invals[1:]], outs
        return compat.wrap_rule(compat.discharge_rules()[signal_p], around)

    def first_model_mismatch(case):
        return next(f for f in oracles.check(case).failures
                    if isinstance(f, model_vs_path.ModelMismatch))
    dirs = {"corpus_dir": tmp_path / "c", "reports_dir": tmp_path / "r",
            "minimize": False, "verify": False}
    real = compat.discharge_rules()[signal_p]
    plant(compat.discharge_rules(), signal_p, changing(lambda old, new: old))   # lost
    lost, _ = filing.record(first_model_mismatch(ONE), **dirs)
    plant(compat.discharge_rules(), signal_p, real)
    plant(compat.discharge_rules(), signal_p, changing(lambda old, new: 2 * new - old))  # twice
    twice, new = filing.record(first_model_mismatch(ONE), **dirs)
    assert new and twice.id != lost.id and twice.related == [lost.id]
    assert "update lost" in lost.signature and "update applied twice" in twice.signature
    # (in the report's comment, for whoever triages: not a maintainer's reading)
    assert f"; looks like {lost.id}" in (tmp_path / "r" / f"{twice.id}.md").read_text()


def test_blame_reads_no_line_of_an_earlier_cases_kernel():
    # JAX 0.7 to 0.9 may hand an equation of one case the traceback of an
    # earlier case's kernel (what it traced is cached with its source info):
    # that line is another statement there, and may be none here.
    first = ir.Case((ir.Ref("int32", (2,)),), (Get(ir.View(0)), Swap(ir.View(0), Iota("int32", (2,)))),
                    ("abstract",))
    kernel = emit.live_kernel(first)
    _, where = emit.kernel_lines(first)
    line = next(n for n, k in where.items() if k == 1)
    assert emit.statement_at(kernel.__code__.co_filename, line) == 1
    oracles.check(ir.Case((ir.Ref("int32", ()),), (Get(ir.View(0)),), ("abstract",)))
    assert emit.statement_at(kernel.__code__.co_filename, line) is None


# --- one report per root cause ---------------------------------------------------

def _signal_rule(around):
    return compat.wrap_rule(compat.discharge_rules()[signal_p], around)


def _file(case, tmp_path):
    failure = next(f for f in oracles.check(case).failures if f.known is None)
    return filing.record(failure, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                         minimize=False, verify=False)


# A valid signal, and an invalid one (out of bounds of a zero-size ref) that
# JAX lets through to discharge, where it should raise IndexError.
VALID = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(1)),), ("abstract",))
INVALID = ir.Case((ir.Ref("int16", (0,)),), (Signal(_at(0), ir.Int(0)),), ("abstract",),
                  expect=ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)",
                                          "semaphore_signal"))


def test_one_bug_seen_by_two_oracles_is_one_report(plant, tmp_path):
    """A rule that raises for every signal: valid-runs on a valid program,
    invalid-rejected on an invalid one; two signatures, one root cause."""
    def always(call, in_avals, values, params):
        raise NotImplementedError("planted")
    plant(compat.discharge_rules(), signal_p, _signal_rule(always))
    first, new = _file(VALID, tmp_path)
    second, again = _file(INVALID, tmp_path)
    assert new and not again and second.id == first.id
    assert [(i["oracle"], i["paths"]) for i in second.instances] == [
        ("invalid-rejected", ["abstract"])]
    assert [p.stem for p in (tmp_path / "r").glob("*.json")] == [first.id]   # one report
    md = (tmp_path / "r" / f"{first.id}.md").read_text()
    assert "### Other faces of this root cause" in md and "invalid-rejected" in md


def test_two_bugs_in_one_rule_are_two_reports(plant, tmp_path):
    """The rule goes wrong two ways (another exception for a ref of another
    shape): two root causes, two reports."""
    def two_ways(call, in_avals, values, params):
        if tuple(in_avals[0].shape) == ():
            raise KeyError("planted one")
        raise ValueError("planted two")
    plant(compat.discharge_rules(), signal_p, _signal_rule(two_ways))
    one, new_one = _file(VALID, tmp_path)
    other = ir.Case((ir.Ref("int16", (3,)),), (Signal(_at(1), ir.Int(1)),), ("abstract",))
    two, new_two = _file(other, tmp_path)
    assert new_one and new_two and one.id != two.id
    assert one.root_cause != two.root_cause and not one.instances


def test_an_int16_stand_in_becomes_the_semaphore_type_it_stands_for():
    from fuzz.ops.dma import DmaStart, DmaWait
    copy = ir.Case((ir.Ref("int16", ()), ir.Ref("float32", (2,)), ir.Ref("float32", (2,)),
                    ir.Ref("int16", (2,))),
                   (DmaStart(ir.View(1), ir.View(2), ir.View(0)),
                    DmaWait(ir.View(1), ir.View(2), ir.View(0)),
                    Signal(ir.View(3, (ir.At((ir.Int(1),)),)), ir.Int(1)),
                    # (a read takes either kind: it decides neither)
                    Read(ir.View(0)), Read(ir.View(3, (ir.At((ir.Int(0),)),)))))
    real = filing.with_real_semaphores(copy)
    assert [r.kind for r in real.refs] == ["dma", "float32", "float32", "regular"]
    only_read = ir.Case((ir.Ref("int16", ()),), (Read(ir.View(0)),))
    assert [r.kind for r in filing.with_real_semaphores(only_read).refs] == ["regular"]
    assert filing.with_real_semaphores(real) is None   # nothing stands in any more
    # An int16 ref signalled and also a pipeline's data has no real type (a
    # worker filing such a case died of the IRError).
    from fuzz.ops.control import Pipeline   # (the control family, for this case only)
    both = ir.Case((ir.Ref("int16", (1, 2)),), (
        Signal(ir.View(0, (ir.At((ir.Int(0), ir.Int(0))),)), ir.Int(1)), Pipeline(1, (0,), ())))
    assert filing.with_real_semaphores(both) is None


@pytest.mark.skipif(not seen_on.applies("known", "check-sem-avals-last-transform-not-indexer"),
                    reason="its example does not fail on this JAX")
def test_a_finding_is_filed_with_real_semaphore_types_where_it_shows_so(tmp_path):
    """A maintainer pushes back on an int16 array standing in for a
    semaphore: the filed program uses a pltpu.SemaphoreType where the bug
    shows with one (the same root cause), on a path that takes it."""
    k = known_findings.BY_ID["check-sem-avals-last-transform-not-indexer"]
    assert k.example.refs[0].kind == "int16"
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    finding, new = filing.record(failure, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r")
    assert new and [r.kind for r in finding.case.refs] == ["regular"]
    assert finding.reproducer["status"] == "reproduces"
    assert "pltpu.SemaphoreType.REGULAR" in finding.reproducer["script"]
    # The stand-in's own form, hit again, is counted there, not filed again.
    again, new_again = filing.record(failure, corpus_dir=tmp_path / "c",
                                     reports_dir=tmp_path / "r")
    assert not new_again and again.id == finding.id and again.hits == 2


def test_known_entries_a_review_calls_one_root_cause_are_one_report(tmp_path):
    """`KnownFinding.same_as`: the vmap entry that crashes is the silent one's
    other face (one `_pred_bcast_select_hlo` bug); filed second, it is an
    instance of the first report, not a report of its own."""
    silent = known_findings.BY_ID["vmap-while-batched-count-ref-off-leading-axis-silent"]
    loud = known_findings.BY_ID["vmap-while-batched-count-ref-off-leading-axis"]
    assert loud.same_as == silent.id and not silent.same_as
    if not (seen_on.applies("known", silent.id) and seen_on.applies("known", loud.id)):
        pytest.skip("the vmap entries do not both fail on this JAX")
    first, new = filing.record(next(f for f in oracles.check(silent.example).failures
                                    if f.known == silent.id),
                               corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                               minimize=False, verify=False)
    second, again = filing.record(next(f for f in oracles.check(loud.example).failures
                                       if f.known == loud.id),
                                  corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                                  minimize=False, verify=False)
    assert new and not again and second.id == first.id and second.instances
    assert [p.stem for p in (tmp_path / "r").glob("*.json")] == [first.id]
    assert reports.severity(first.to_record()) == "silent wrong value"


def test_a_list_jax_writes_in_set_order_does_not_split_a_signature():
    """JAX lists accepted dtypes in set order, which changed after other
    tests ran: the regression of addupdate-bool-ref-gather then passed."""
    one = "Accepted dtypes at position 0 are subtypes of integer, floating, complexfloating."
    other = "Accepted dtypes at position 0 are subtypes of integer, complexfloating, floating."
    assert findings.normalize(one) == findings.normalize(other)


def test_where_jax_is_installed_does_not_split_a_signature():
    """A message naming a JAX source file by its path (eager while_loop's
    'when tracing while at .../jax/_src/dispatch.py:N') made the regression
    pass in a clean clone, whose JAX is installed elsewhere."""
    here = "when tracing while at /work/main/.venv/lib/python3.12/site-packages/jax/_src/dispatch.py:90 for jit"
    there = "when tracing while at /tmp/cc/.venv/lib/python3.12/site-packages/jax/_src/dispatch.py:90 for jit"
    assert findings.normalize(here) == findings.normalize(there)
    assert "jax/_src/dispatch.py:N" in findings.normalize(here)


def test_a_finding_filed_unverified_as_a_campaign_stops_is_completed_after(tmp_path):
    """Workers that stop file what they found without minimizing or
    verifying it; the supervisor completes it afterwards (filing.complete),
    so a run does not end with findings unverified."""
    k = known_findings.BY_ID["read-dtype-unchecked"]
    if not seen_on.applies("known", k.id):
        pytest.skip(f"{k.id} is not live on this JAX")
    dirs = {"corpus_dir": tmp_path / "c", "reports_dir": tmp_path / "r"}
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    unverified, _ = filing.record(failure, **dirs, minimize=False, verify=False)
    assert unverified.status == "unverified"
    again, _ = filing.record(failure, **dirs, minimize=False, verify=False)   # seen again
    assert again.status == "still failing" and again.reproducer["status"] == "not verified"
    finding, new = filing.complete(unverified.id, **dirs)
    assert new and finding.status == "new" and finding.reproducer["status"] == "reproduces"
    assert [r["status"] for r in reports.records(tmp_path / "r")] == ["new"]
    assert filing.complete(finding.id, **dirs) is None   # nothing left to complete


# --- a wrong value's root cause: the rule that computed it ---------------------

def _signal_adding_twice(call, in_avals, values, params):
    new_invals, outs = call()
    new = new_invals[0]
    return [None if new is None else values[0] + 2 * (new - values[0]), *new_invals[1:]], outs


def _file_every(cases, tmp_path):
    """File every failure of every case, as a campaign meeting them would:
    (its signature, whether it was a new report), each."""
    filed = []
    for case in cases:
        for failure in oracles.check(case).failures:
            if failure.known is None:
                _, new = filing.record(failure, corpus_dir=tmp_path / "c",
                                       reports_dir=tmp_path / "r", minimize=False, verify=False)
                filed.append((findings.signature(failure), new))
    return filed


_SCALAR = ir.Ref("int16", ())
# One signal that adds twice, seen four ways: a final count, a read after it,
# a read after a wait (the wait's signature), a real semaphore on pallas_call
# (which shows reads, not counts).
_SEEN_FOUR_WAYS = (
    ir.Case((_SCALAR,), (Signal(ir.View(0), ir.Int(2)),), ("run_state",)),
    ir.Case((_SCALAR,), (Signal(ir.View(0), ir.Int(2)), Read(ir.View(0))), ("run_state",)),
    ir.Case((_SCALAR,), (Signal(ir.View(0), ir.Int(3)), Wait(ir.View(0), ir.Int(1)),
                         Read(ir.View(0))), ("run_state",)),
    ir.Case((ir.Ref("regular", (3,)),), (Signal(_at(1), ir.Int(3)), Wait(_at(1), ir.Int(1)),
                                         Read(_at(1))), ("pallas_call",)),
)


def test_one_wrong_value_bug_seen_four_ways_is_one_report(plant, tmp_path):
    """Four signatures (two oracles' primitives, two paths), one rule that
    computed the wrong value: one report, blaming that rule, with the other
    faces as its instances."""
    plant(compat.discharge_rules(), signal_p, _signal_rule(_signal_adding_twice))
    filed = _file_every(_SEEN_FOUR_WAYS, tmp_path)
    assert len({sig for sig, _ in filed}) == 4
    assert [new for _, new in filed] == [True, False, False, False]
    (report,) = reports.records(tmp_path / "r")
    assert report["root_cause"] == "rule:discharge:semaphore_signal:too high"
    assert len(report["instances"]) == 3
    assert reports.blamed_code(report) == (
        "Blamed", ["jax/_src/pallas/primitives.py:_semaphore_signal_discharge_rule"])


def test_two_wrong_value_bugs_in_one_rule_are_two_reports(plant, tmp_path):
    """The rule is wrong two ways: a scalar semaphore's signal adds twice, an
    array's lands on the next element. One rule, two root causes."""
    def two_ways(call, in_avals, values, params):
        if tuple(in_avals[0].shape) == ():
            return _signal_adding_twice(call, in_avals, values, params)
        new_invals, outs = call()
        delta = (new_invals[0] - values[0]).reshape(-1)
        return [values[0] + jnp.roll(delta, 1).reshape(values[0].shape), *new_invals[1:]], outs
    plant(compat.discharge_rules(), signal_p, _signal_rule(two_ways))
    filed = _file_every((_SEEN_FOUR_WAYS[1], ONE), tmp_path)
    assert [new for _, new in filed] == [True, True]
    assert sorted(r["root_cause"] for r in reports.records(tmp_path / "r")) == [
        "rule:discharge:semaphore_signal:too high",
        "rule:discharge:semaphore_signal:too low"]


def test_a_wrong_value_inside_a_loop_is_blamed_on_the_statement_in_it(plant):
    """A loop around the wrong signal is not the culprit: its body alone
    still shows the wrong value."""
    from fuzz.ops.control import Loop
    plant(compat.discharge_rules(), signal_p, _signal_rule(_signal_adding_twice))
    looped = ir.Case((_SCALAR,), (Loop(ir.Int(2), (Signal(ir.View(0), ir.Int(1)),)),),
                     ("run_state",))
    failure = next(f for f in oracles.check(looped).failures if f.known is None)
    assert findings.root_cause(failure) == "rule:discharge:semaphore_signal:too high"


def test_one_wrong_value_bug_seen_by_two_oracles_is_one_report(plant, tmp_path):
    """A signal through a chain of two views loses its update: the model sees
    the lost update, chain-equivalence the re-indexed program disagreeing.
    Cut short under each oracle (and the model), both isolate the signal."""
    def chained_signal_lost(call, in_avals, values, params):
        new_invals, outs = call()
        _, transforms, *_ = params["args_tree"].unflatten(values)
        return ([values[0], *new_invals[1:]] if len(transforms) >= 2 else new_invals), outs
    plant(compat.discharge_rules(), signal_p, _signal_rule(chained_signal_lost))
    chained = ir.View(0, (ir.At((ir.Int(1),)), ir.At((ir.Int(2),))))
    case = ir.Case((ir.Ref("int16", (2, 3)),), (Signal(chained, ir.Int(2)),), ("run_state",))
    filed = _file_every((case,), tmp_path)
    assert [sig.split("|")[0] for sig, _ in filed] == ["model-vs-path", "chain-equivalence"]
    assert [new for _, new in filed] == [True, False]
    (report,) = reports.records(tmp_path / "r")
    assert report["root_cause"] == "rule:discharge:semaphore_signal:too low"
    assert [i["oracle"] for i in report["instances"]] == ["chain-equivalence"]


def test_a_root_cause_filed_meanwhile_by_another_worker_is_not_filed_twice(
        plant, monkeypatch, tmp_path):
    """Two workers meet two faces of one bug at once: each finds no report of
    its root cause, and minimizes its own. The one that writes second counts
    its face in the first one's report (a 90 s campaign filed two reports of
    one root cause before)."""
    plant(compat.discharge_rules(), signal_p, _signal_rule(_signal_adding_twice))
    first, second = (next(f for f in oracles.check(c).failures if f.known is None)
                     for c in _SEEN_FOUR_WAYS[:2])
    kwargs = dict(corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r", minimize=False,
                  verify=False)
    filing.record(first, **kwargs)
    monkeypatch.setattr(filing, "_count_instance", lambda *args: None)   # looked too early
    owner, new = filing.record(second, **kwargs)
    assert not new and len(reports.records(tmp_path / "r")) == 1
    assert [i["signature"] for i in owner.instances] == [findings.signature(second)]


def test_a_rule_key_names_the_function_of_the_rule_it_blames():
    """Each kind of rule a key names is looked up where the running JAX
    keeps it (on 0.12 the batching table is a write-only proxy beside the
    fancy one: a report blaming a batching rule once crashed the worker
    that wrote the index)."""
    from fuzz.triage import isolate
    assert isolate.rule_code("discharge", "semaphore_signal").endswith(
        ":_semaphore_signal_discharge_rule")
    assert "batching" in isolate.rule_code("batching", "pallas_call")
    assert isolate.rule_code("differentiation", "swap") is not None
    assert isolate.rule_code("tpu-interpreter", "swap") is None   # (no table: not named)
    record = {"root_cause": "rule:batching:pallas_call:results differ", "signature": ""}
    assert reports.blamed_code(record)[0] == "Blamed"


def _raised_by(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the error JAX raised is what is keyed
        return e
    raise AssertionError("it ran")


def test_a_comparison_side_that_raised_is_keyed_by_the_exception_it_raised():
    """jax.vmap (or jax.jit, or a partial discharge) raising where the other
    side runs is a crash: keyed as valid-runs keys the same error, by the JAX
    function that raised, so a second crash of that oracle elsewhere is a
    second report, and one crash seen by two oracles one."""
    import jax
    from fuzz.oracles.errors import UnexpectedError
    from fuzz.oracles.vmap_stack import VmapMismatch
    one = _raised_by(lambda: jax.jit(lambda x: jax.lax.dynamic_slice(x, (0,), (4,)))(jnp.zeros(3)))
    other = _raised_by(lambda: jax.jit(lambda x: jnp.reshape(x, (2,)))(jnp.zeros(3)))
    vmapped = [VmapMismatch.fail(ONE, "?", "run_state", f"vmap raised {e}", shape="raised TypeError",
                                 raised=e) for e in (one, other)]
    assert vmapped[0].symptom_of() == "exception"
    keys = [findings.root_cause(f) for f in vmapped]
    assert keys[0] != keys[1] and all(k.startswith(type(one).__name__ + ":") for k in keys), keys
    plain = UnexpectedError.fail(ONE, "?", "eager", str(one))
    plain.error = one
    assert findings.root_cause(plain) == keys[0]

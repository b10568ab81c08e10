"""Every suppression promises that nothing else hides behind it.

For each known finding, each unsupported-table entry and each filed
regression, a *different* bug is planted beside the entry's trigger (another
primitive, another element, another exception), and the planted bug must be
reported: not counted as known, not tolerated as unsupported, not taken for
a finding filed already. The tests are parametrized over the tables, so a new
entry gets its swallow test without anyone writing one.
"""
import dataclasses
import os

import jax
import pytest

from fuzz import compat, ir, oracles, paths
from fuzz.suppressions import known_findings, seen_on, unsupported
from fuzz.campaign.property import Stats, check_property, filed_signatures
from fuzz.ops.control import Wrap
from fuzz.ops.dma import DmaStart, DmaWait
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.masked_store import MaskedStore
from fuzz.ops.ref.common import Fill, Iota
from fuzz.ops.semaphore import Read, Signal, Wait
from fuzz.oracles import errors, jit_eager, model_vs_path
from fuzz.triage import corpus, filing, findings, reports
from jax._src.pallas import primitives as pallas_primitives
from jax._src.state import primitives as state_primitives
from hunting import needs_eager_at, plant_copies_adding_one, premise

signal_p, wait_p, _ = compat.SEMAPHORE_PRIMITIVES
CORPUS = os.path.join(os.path.dirname(__file__), os.pardir, "corpus")
REPORTS = os.path.join(os.path.dirname(__file__), os.pardir, "reports")
PLANTED_SHAPE = (7,)   # no entry's example has a ref of this shape


def _entries():
    """(example, id, whether its paths run it to the end, so that a wrong
    value beside it can be seen)."""
    for k in known_findings.KNOWN:
        raises = any(o == "valid-runs" for o, _ in k.symptoms)
        # The TPU interpreter calls no discharge rule, so a rule planted wrong
        # shows only where an example also runs on a discharging path.
        discharges = any(paths.variant_of(p) != "tpu_interpret" for p in k.example.paths)
        yield k.example, f"known:{k.id}", k.example.valid and not raises and discharges
    for e in unsupported.CURRENT:
        yield e.example, f"unsupported:{e.id}", False   # the path refuses it
    for path in corpus.files(CORPUS, "regression"):
        entry = corpus.load(path)
        if entry.meta.get("known"):   # what suppresses it is its known entry, planted above
            continue
        # Only where its bug is (its report's Affected releases): elsewhere
        # there is nothing for a planted bug to hide behind.
        here = reports.verdict_here(reports.load(REPORTS, entry.meta["id"]) or {})
        if entry.case is not None and entry.meta.get("oracle") != "crash" and here in (None, "bad"):
            yield (entry.case, f"regression:{entry.meta['id']}",
                   entry.case.valid and entry.meta.get("oracle") != "valid-runs")


_SEMAPHORE_CASE = ir.Case((ir.Ref("regular", (1,)),), ())


def _semaphores_run(case) -> bool:
    """Whether one of the case's paths runs semaphores (refs under jit do not)."""
    return any(paths.not_applicable(_SEMAPHORE_CASE, p) is None for p in case.paths)


ENTRIES = list(_entries())
ALL = [pytest.param(case, id=name) for case, name, _ in ENTRIES]
RUNNING = [pytest.param(case, id=name) for case, name, runs in ENTRIES
           if runs and _semaphores_run(case)]


def _with_planted_ref(case):
    """``case`` plus a ref of `PLANTED_SHAPE`, of the kind its paths take."""
    arrays = not any(r.is_semaphore for r in case.refs) and case.paths != ("tpu_interpret",)
    kind = "int16" if arrays else "regular"
    return dataclasses.replace(case, refs=(*case.refs, ir.Ref(kind, PLANTED_SHAPE)))


def _planted_statements(ref):
    at0 = ir.View(ref, (ir.At((ir.Int(0),)),))
    return Signal(at0, ir.Int(2)), Wait(at0, ir.Int(1)), Read(at0)


def _other_primitive(case) -> str:
    """A semaphore primitive other than the trigger's (wait, unless the case waits)."""
    return "signal" if any(isinstance(s, Wait) for s in case.body) else "wait"


def _filed() -> set[str]:
    return filed_signatures(CORPUS, on_warning=pytest.fail)


def _reported(case, plant_hit):
    """The failures a campaign worker would raise (not known, not tolerated
    as unsupported, not filed already) that ``plant_hit(failure)`` accepts."""
    report = oracles.check(case)
    filed = _filed()
    unknown = [f for f in report.failures
               if not known_findings.match(f, report.failures)
               and findings.signature(f) not in filed]
    assert any(plant_hit(f) for f in unknown), (
        f"planted bug swallowed; failures: {[(f.oracle, f.message) for f in report.failures]}")
    return unknown


def _plant_get_error(plant):
    """A KeyError in get's abstract evaluation of a ref of `PLANTED_SHAPE`."""
    real = state_primitives.get_p.abstract_eval

    def get_abstract_eval(ref_aval, *args, **params):
        if tuple(ref_aval.shape) == PLANTED_SHAPE:
            raise KeyError("planted")
        return real(ref_aval, *args, **params)
    plant(state_primitives.get_p, "abstract_eval", get_abstract_eval)


def _planted_get_first_is_reported(case, plant):
    """A planted get error, on a ref of its own, before ``case``'s statements."""
    _plant_get_error(plant)
    # The whole ref: an eager jax.Ref takes no .at[] before 0.12, and the
    # case may run on that path only.
    planted = Get(ir.View(len(case.refs)))
    case = dataclasses.replace(case, refs=(*case.refs, ir.Ref("int32", PLANTED_SHAPE)),
                               body=ir.with_statement(case.body, 0, planted))
    _reported(case, lambda f: isinstance(f.error, KeyError) and "planted" in str(f.error)
              and f.statement == 0)


@pytest.mark.parametrize("example", [e for e in ALL if not _semaphores_run(e.values[0])])
def test_a_planted_get_error_beside_the_trigger_is_reported(example, plant):
    """Where semaphores cannot run (refs under jit), the planted bug is a
    KeyError in get's abstract evaluation, on a data ref only the planted
    statement uses, before the trigger."""
    _planted_get_first_is_reported(example, plant)


# A store through a static index beside a dynamic one (r[0, i]): under
# jax.vmap, where i is batched, the indexer is a gather, as a strided
# slice makes it (strided-slice-then-index-typedint's vmap face).
STATIC_BESIDE_BATCHED = ir.Case((ir.Ref("float32", (1, 3)),), (Swap(ir.View(0, (ir.At((
    ir.Int(0), ir.Int(1, dynamic=True))),)), Iota("float32", ())),), ("eager",))


# A read through a view indexed twice, stored back: reverse-mode AD
# transposes the get into an addupdate through the same view, which
# _addupdate_discharge refuses (the README's main job filed it as new).
READ_THROUGH_TWO_INDEXERS = ir.Case((ir.Ref("float32", (2, 2)),), (
    Get(ir.View(0, (ir.At((ir.Slice(), ir.Int(0))), ir.At((ir.Slice(),))))),
    Swap(ir.View(0, (ir.At((ir.Slice(), ir.Int(1))),)), ir.Result(0))), ("eager",))


@needs_eager_at
@pytest.mark.parametrize("case, known, oracle", [
    # One missing case of _convert_to_gather_arrays (a TypedInt index in a
    # gather): reached by a strided slice, or by jax.vmap batching the other index.
    pytest.param(STATIC_BESIDE_BATCHED, "strided-slice-then-index-typedint", "vmap-stack",
                 id="static-index-beside-a-batched-one"),
    pytest.param(READ_THROUGH_TWO_INDEXERS, "addupdate-through-two-indexers", "grad-matches",
                 id="grad-of-a-read-through-two-indexers")])
def test_a_transformations_face_is_its_known_finding(case, known, oracle, plant):
    """A face a transformation (vmap, grad) gives a known bug is that
    finding; a planted get error beside it is still new."""
    k = known_findings.BY_ID[known]
    if not seen_on.applies("known", k.id):
        pytest.skip(f"JAX {jax.__version__}: {k.id} is not live here")
    failures = oracles.check(case, oracles=(oracle,)).failures
    assert [(f.oracle, f.known) for f in failures] == [(oracle, k.id)], failures
    _planted_get_first_is_reported(case, plant)


# A pltpu.store through a reshape leaves the ref's discharged value of the
# view's shape (masked-swap-returns-transformed-ref); an addupdate of the
# whole ref then adds arrays of two shapes.
STORE_THEN_ADD = ir.Case((ir.Ref("int16", (3, 3)),), (
    MaskedStore(ir.View(0, (ir.Reshape((1, 9)),)), Iota("int16", (1, 9))),
    AddUpdate(ir.View(0), Iota("int16", (3, 3)))), ("abstract",))


def test_an_addupdate_after_a_reshaped_store_is_its_consequence(plant):
    """'add got incompatible shapes' on the ref a reshaped pltpu.store wrote
    is the store's bug seen downstream (a campaign filed it as new); a
    planted get error beside it is still reported."""
    k = known_findings.BY_ID["masked-swap-returns-transformed-ref"]
    if not seen_on.applies("known", k.id):
        pytest.skip(f"JAX {jax.__version__}: {k.id} is not live here")
    failures = oracles.check(STORE_THEN_ADD).failures
    assert {(f.oracle, f.known) for f in failures} == {
        ("aval-preserved", k.id), ("valid-runs", k.id)}, failures
    _planted_get_first_is_reported(STORE_THEN_ADD, plant)


def test_a_consequence_is_matched_when_its_symptom_is_not_reported():
    """With only valid-runs reported (``--oracles``), the add's error is
    still the store's consequence: its symptom, an aval-preserved failure,
    ran though it is not reported (a campaign with ``--oracles vmap-stack``
    filed such a consequence as new)."""
    k = known_findings.BY_ID["masked-swap-returns-transformed-ref"]
    if not seen_on.applies("known", k.id):
        pytest.skip(f"JAX {jax.__version__}: {k.id} is not live here")
    failures = oracles.check(STORE_THEN_ADD, oracles=("valid-runs",)).failures
    assert [(f.oracle, f.known) for f in failures] == [("valid-runs", k.id)], failures


@pytest.mark.parametrize("example", [e for e in ALL if _semaphores_run(e.values[0])])
def test_a_planted_error_beside_the_trigger_is_reported(example, plant):
    """The planted bug: a KeyError while tracing the other primitive, on a
    ref only the planted statements use, before the trigger."""
    name = _other_primitive(example)
    real = pallas_primitives.check_sem_avals

    def check_sem_avals(sem_aval, sem_transforms_avals, what, *args, **kwargs):
        if what == name and tuple(sem_aval.shape) == PLANTED_SHAPE:
            raise KeyError("planted")
        return real(sem_aval, sem_transforms_avals, what, *args, **kwargs)
    plant(pallas_primitives, "check_sem_avals", check_sem_avals)
    case = _with_planted_ref(example)
    body = example.body
    for k, stmt in enumerate(_planted_statements(len(example.refs))[:2]):
        body = ir.with_statement(body, k, stmt)
    case = dataclasses.replace(case, body=body)
    _reported(case, lambda f: isinstance(f.error, KeyError) and "planted" in str(f.error)
              and f.statement == (0 if name == "signal" else 1))


@pytest.mark.parametrize("example", RUNNING)
def test_a_planted_wrong_count_beside_the_trigger_is_reported(example, plant):
    """The planted bug: a wait on the planted ref that forgets to decrement,
    after the trigger; its read is one too high."""
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        if tuple(in_avals[0].shape) == PLANTED_SHAPE:
            new_invals = [values[0], *new_invals[1:]]
        return new_invals, outs
    plant(compat.discharge_rules(), wait_p,
          compat.wrap_rule(compat.discharge_rules()[wait_p], around))
    case = _with_planted_ref(example)
    wait_at = len(example.statements) + 1
    evaluated = any(p != "abstract" for p in example.paths)
    case = dataclasses.replace(   # a wrong value needs a path that evaluates
        case, body=(*example.body, *_planted_statements(len(example.refs))),
        paths=example.paths if evaluated else ir.PATHS)
    _reported(case, lambda f: f.oracle in ("model-vs-path", "path-vs-path")
              and f.statement in (wait_at, wait_at + 1))


# --- the ways a new bug used to hide, each planted once ----------------------

def _at(ref, *indices):
    return ir.View(ref, (ir.At(tuple(ir.Int(i) if isinstance(i, int) else i
                                     for i in indices)),))


def _rule(prim, change):
    """The real rule of ``prim``; its new ref values replaced by
    ``change(in_avals, old, new)``."""
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        return [change(in_avals, values[0], new_invals[0]), *new_invals[1:]], outs
    return compat.wrap_rule(compat.discharge_rules()[prim], around)


def _raising(prim, error):
    def around(call, in_avals, values, params):
        raise error
    return compat.wrap_rule(compat.discharge_rules()[prim], around)


def _worker_check(case):
    """`check_property` as a campaign worker runs it: filed signatures count
    as found already."""
    filed = _filed()
    return check_property(
        case, Stats(), already_found=lambda f: findings.signature(f) in filed)


def test_a_filed_wrong_value_signature_does_not_swallow_another_wrong_value(plant):
    import jax.numpy as jnp

    def to_the_next_element(in_avals, old, new):
        delta = (new - old).reshape(-1)
        return old + jnp.roll(delta, 1).reshape(old.shape)
    plant(compat.discharge_rules(), signal_p, _rule(signal_p, to_the_next_element))
    # Its message reads like the filed duplicate-gather regression's
    # ("final s0[0] is 0, expected 1"); its shape of failure does not.
    case = ir.Case((ir.Ref("int16", (2,)),), (Signal(_at(0, 0), ir.Int(1)),),
                   paths=("run_state",))
    with pytest.raises(model_vs_path.ModelMismatch) as caught:
        _worker_check(case)
    assert caught.value.primitive == "semaphore_signal"


def test_an_unlisted_not_implemented_error_is_a_finding(plant):
    plant(compat.discharge_rules(), signal_p, _raising(signal_p, NotImplementedError("broke")))
    case = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(1)),))
    stats = Stats()
    with pytest.raises(errors.UnexpectedError) as caught:
        check_property(case, stats)
    assert caught.value.symptom_of() == "unsupported" and not stats.unsupported
    for path in ("run_state", "pallas_call"):   # the TPU interpreter runs no such rule
        with pytest.raises(errors.UnexpectedError):
            check_property(dataclasses.replace(case, paths=(path,)), stats)


def _invalid_read(view, expect):
    return ir.Case((ir.Ref("int16", ()), ir.Ref("int16", (2, 2, 2))),
                   (Signal(ir.View(0), ir.Int(1)), Read(view)),
                   paths=("abstract", "pallas_call"), expect=expect)


@pytest.mark.parametrize("case", [
    # read-view-shape-unchecked: a non-scalar read
    _invalid_read(ir.View(1), ir.ExpectedError("ValueError", r"non-\(\)-shaped semaphore",
                                               "semaphore_read")),
    # bitcast-semaphore-unclear-error: a bitcast read
    _invalid_read(ir.View(1, (ir.At((ir.Int(0),)), ir.Bitcast("int8"))),
                  ir.ExpectedError("NotImplementedError|ValueError", r"(?i)bitcast",
                                   "semaphore_read")),
], ids=["non-scalar-read", "bitcast-read"])
def test_a_broad_invalid_program_matcher_does_not_swallow_another_error(case, plant):
    plant(compat.discharge_rules(), signal_p, _raising(signal_p, KeyError("planted")))
    with pytest.raises(errors.WrongError) as caught:
        _worker_check(case)
    assert "KeyError" in caught.value.message and caught.value.statement == 0


def test_a_duplicate_gather_does_not_swallow_a_lost_wait_elsewhere(plant):
    plant(compat.discharge_rules(), wait_p, _rule(wait_p, lambda avals, old, new: old))
    gather = ir.View(0, (ir.At((ir.IntArray((0, 0), dynamic=True),)), ir.At((ir.Int(0),))))
    case = ir.Case((ir.Ref("int16", (2,)), ir.Ref("int16", ())),
                   (Signal(ir.View(1), ir.Int(1)), Wait(ir.View(1), ir.Int(1)),
                    Read(ir.View(1)), Read(gather)),
                   paths=("run_state", "pallas_call"))
    with pytest.raises(model_vs_path.ModelMismatch) as caught:
        _worker_check(case)
    assert caught.value.statement == 1 and caught.value.primitive == "semaphore_wait"


def test_strict_xfails_name_the_failure_they_expect():
    """A fuzzer crash must fail the suite, not pass as 'the JAX bug is still
    there'."""
    import test_corpus
    import test_known_findings
    for test in (test_known_findings.test_known_finding_is_fixed,
                 test_corpus.test_regression_is_fixed):
        params = next(m for m in test.pytestmark if m.name == "parametrize").args[1]
        for param in params:
            xfail = [m for m in param.marks if m.name == "xfail"]
            assert xfail and all(issubclass(c, oracles.OracleFailure)
                                 for m in xfail for c in m.kwargs["raises"]), param.id


def test_jit_eager_counts_the_stand_ins_effect_and_compares_values():
    """run_state of an int16 stand-in semaphore does not lower under jit
    (its SemaphoreEffect escapes): an artifact of the stand-in, counted and
    never a failure; the values are compared with the effect filtered."""
    case = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(3)),
                                                  Read(ir.View(0))), paths=("run_state",))
    report = oracles.check(case)
    assert report.compared.get("jit-eager") == 1 and not report.failures, report.failures
    assert set(report.artifacts) <= {jit_eager.EFFECT_ARTIFACT}
    stats = Stats()   # a campaign counts them for its summary
    check_property(case, stats)
    assert stats.artifacts == report.artifacts


def test_a_reproducer_that_does_not_reproduce_is_flaky_not_new(plant, tmp_path):
    # The bug is planted in this process only: the fresh interpreter that
    # verifies the reproducer runs real JAX, where the case is fine.
    plant(compat.discharge_rules(), signal_p, _raising(signal_p, KeyError("planted")))
    case = ir.Case((ir.Ref("int16", ()),), (Signal(ir.View(0), ir.Int(1)),),
                   paths=("pallas_call",))
    failure = oracles.check(case).failures[0]
    dirs = {"corpus_dir": tmp_path / "c", "reports_dir": tmp_path / "r"}
    finding, new = filing.record(failure, **dirs, minimize=False)
    assert (finding.status, new) == ("flaky", False)
    assert (tmp_path / "r" / "flaky" / f"{finding.id}.json").exists()
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").rglob("*.json"))
    again, new = filing.record(failure, **dirs, minimize=False)
    assert (again.status, again.hits, new) == ("flaky", 2, False)
    unverified, new = filing.record(failure, corpus_dir=tmp_path / "c2",
                                      reports_dir=tmp_path / "r2", minimize=False, verify=False)
    assert (unverified.status, new) == ("unverified", True)



def test_a_bare_refusal_is_the_while_entrys_only_in_a_case_with_a_while_loop(monkeypatch):
    """The words of a bare NotImplementedError say nothing: another rule's
    refusal, in a case without a while loop, is not taken as the while rule's."""
    entry = next(e for e in unsupported.TABLE if e.id == "while-cond-reads-a-ref-abstract")
    monkeypatch.setattr(unsupported, "CURRENT", (entry,))
    assert unsupported.classify("abstract", "NotImplementedError: ", entry.example) is entry
    other = ir.Case((ir.Ref("int32", (2,)),), (Get(ir.View(0)),), ("abstract",))
    assert unsupported.classify("abstract", "NotImplementedError: ", other) is None


def _only_known_as(entry_id: str, case):
    """Every failure of ``case`` is the known finding ``entry_id``'s."""
    report = oracles.check(case)
    known = {getattr(known_findings.match(f, report.failures), "id", None)
             for f in report.failures}
    assert known == {entry_id}, [(f.oracle, f.message) for f in report.failures]


@premise(seen_on.applies("known", "emit-pipeline-closed-over-ref"),
         "no emit-pipeline-closed-over-ref here")
def test_a_pipeline_reading_dyn_is_the_closed_over_ref_finding_and_hides_no_other_bug(plant):
    """``dyn``, read for a dynamic index in a pipeline's body, is a ref the
    kernel closes over: the known finding's trigger, not a new bug (the
    default run filed it new five times in a minute). A planted get error
    beside it is still reported."""
    from fuzz.ops.control import Pipeline
    pipe = Pipeline(3, (0,), (Get(ir.View(0, (ir.STEP, ir.At((ir.Int(1, dynamic=True),))))),))
    case = ir.Case((ir.Ref("int32", (3, 2)),), (pipe,), ("abstract", "pallas_call"))
    _only_known_as("emit-pipeline-closed-over-ref", case)
    _planted_get_first_is_reported(case, plant)


@premise(seen_on.applies("known", "inlined-pipeline-inside-wrapper"),
         "no inlined-pipeline-inside-wrapper here")
def test_an_invalid_program_failing_first_on_a_wrapped_pipeline_is_known_and_hides_no_other_bug(
        plant):
    """An invalid program whose wrapped inlined pipeline fails (the DMA
    semaphores cross the wrapper) before its own mistake is the known
    finding, not a new one (the default run filed five with seed 7); a
    planted get error before it is still reported."""
    example = known_findings.BY_ID["inlined-pipeline-inside-wrapper"].example
    sem = len(example.refs)
    out_of_bounds = Signal(ir.View(sem, (ir.At((ir.Int(0),)),)), ir.Int(1))
    case = dataclasses.replace(example, refs=(*example.refs, ir.Ref("regular", (0,))),
                               body=(*example.body, out_of_bounds), expect=ir.ExpectedError(
                                   "IndexError|ValueError", r"(?i)out of (bounds?|range)",
                                   "semaphore_signal"))
    _only_known_as("inlined-pipeline-inside-wrapper", case)
    _planted_get_first_is_reported(case, plant)


def test_an_invalid_program_refused_as_unsupported_first_is_no_finding_and_hides_no_other_bug(
        plant):
    """A transposed view is refused (unsupported.py) before an invalid
    program's own out-of-bounds index is seen: which of two errors JAX
    raises first it does not say, so that is no finding (it was the known
    entry transpose-not-dischargeable). A planted get error before it is
    still reported."""
    case = ir.Case((ir.Ref("int16", (1, 1)),), (Signal(ir.View(0, (
        ir.Transpose((1, 0)), ir.At((ir.Int(3), ir.Int(0))))), ir.Int(1)),),
        ("abstract", "run_state"),
        ir.ExpectedError("IndexError|ValueError", r"(?i)out of (bounds?|range)", "semaphore_signal"))
    report = oracles.check(case)
    assert not report.failures and {u[1].id for u in report.unsupported} == {
        "transpose-not-dischargeable-abstract", "transpose-not-dischargeable-run_state"}
    _planted_get_first_is_reported(case, plant)


@premise(seen_on.applies("known", "emit-pipeline-closed-over-ref"),
         "no emit-pipeline-closed-over-ref here")
def test_a_pipeline_printing_a_kernel_ref_is_the_closed_over_ref_finding_and_hides_no_other_bug(
        plant):
    """A pipeline body's debug callback of a ref of the kernel it is not
    given fails with a bare StopIteration (the main job filed it new): the
    known finding; a planted get error beside it is still reported."""
    from fuzz.ops.control import Pipeline
    from fuzz.ops.ref import Inspect
    pipe = Pipeline(1, (1,), (Inspect(ir.View(0), via="callback"),))
    case = ir.Case((ir.Ref("int16", ()), ir.Ref("int16", (1, 1))), (pipe,), ("pallas_call",))
    _only_known_as("emit-pipeline-closed-over-ref", case)
    # (blame pins the planted error to no statement in this kernel)
    _plant_get_error(plant)
    planted = dataclasses.replace(case, refs=(*case.refs, ir.Ref("int32", PLANTED_SHAPE)),
                                  body=ir.with_statement(case.body, 0, Get(ir.View(2))))
    _reported(planted, lambda f: isinstance(f.error, KeyError) and "planted" in str(f.error))


def _plant_swap_off_by_one(plant):
    """swap's discharge rule writes every new value plus one."""
    rules = compat.discharge_rules()
    swap = next(p for p in rules if p.name == "swap")

    def around(call, in_avals, values, params):
        new_invals, outs = call()
        return [None if v is None else v + 1 for v in new_invals], outs
    plant(rules, swap, compat.wrap_rule(rules[swap], around))


@premise(seen_on.applies("known", "same-width-bitcast-below-2d"),
         "no same-width-bitcast-below-2d here")
def test_unmasking_runs_a_case_again_without_a_known_crash_and_reports_what_it_hid(plant):
    """A wrong value planted in swap's discharge rule, behind a known crash
    that stops every path first (same-width bitcasts of a 1-D ref): counted
    as the known crash alone, unless the case runs again without its
    triggers (``unmask``), where the planted swap is reported."""
    _plant_swap_off_by_one(plant)
    # Two statements with its trigger: unmasking drops both, not just the
    # one that raised (the other would raise it again).
    case = ir.Case((ir.Ref("int32", (3,)), ir.Ref("int32", (2,))), (
        Get(ir.View(0, (ir.Bitcast("float32"),))), Swap(ir.View(1), Fill(ir.Int(5), (2,))),
        Get(ir.View(0, (ir.Bitcast("float32"),)))))
    _swap_seen_only_unmasked(case, "same-width-bitcast-below-2d")


@premise(seen_on.applies("known", "shard-map-of-a-ref-view-at-an-integer-index"),
         "no shard-map-of-a-ref-view-at-an-integer-index here")
def test_unmasking_makes_a_crashing_statement_simpler_where_that_loses_the_trigger(plant):
    """A wrong value planted in swap's discharge rule, inside a shard_map
    called on a row (a known crash: shard_map takes no view at an integer
    index): unmasking closes the map over the row instead of dropping it
    and the block with it, so the planted swap inside is reported."""
    _plant_swap_off_by_one(plant)
    row = ir.View(0, (ir.STEP,))
    case = ir.Case((ir.Ref("int32", (2, 3)),), (Wrap("shard_map", (
        Swap(row, Fill(ir.Int(5), (3,))),), (0,), ir.Int(1, True)),), ("jax_refs",))
    failure = _swap_seen_only_unmasked(case, "shard-map-of-a-ref-view-at-an-integer-index")
    assert not failure.case.statements[0].xs


def _swap_seen_only_unmasked(case, known):
    """The failure of the planted swap in ``case``: counted as ``known``
    alone, reported when the case runs again unmasked."""
    masked = Stats()
    check_property(case, masked)
    assert set(masked.known) == {known}
    with pytest.raises(oracles.OracleFailure) as raised:
        check_property(case, Stats(), unmask=True)
    failure = raised.value
    assert failure.oracle == "model-vs-path" and failure.known is None
    assert ir.primitive(failure.case.statements[failure.statement]) == "swap"
    return failure


@premise(seen_on.applies("unsupported", "transpose-not-dischargeable-abstract"),
         "discharge takes a transposed view here")
def test_unmasking_runs_a_case_again_without_a_transposed_view_a_path_refused(plant):
    """A wrong value planted in swap's discharge rule, in a case with a
    signal through a transposed view, which every discharging path refuses
    whole (unsupported): unseen, unless the case runs again on those paths
    without that statement (``unmask``), where the planted swap is reported."""
    _plant_swap_off_by_one(plant)
    transposed = ir.View(0, (ir.Transpose((1, 0)), ir.At((ir.Int(0), ir.Int(1)))))
    case = ir.Case((ir.Ref("int16", (2, 2)), ir.Ref("int32", (2,))), (
        Signal(transposed, ir.Int(1)), Swap(ir.View(1), Fill(ir.Int(5), (2,))),
        Wait(transposed, ir.Int(1))), ("abstract", "run_state"))
    masked = Stats()
    check_property(case, masked)
    assert masked.unsupported == {"transpose-not-dischargeable-abstract": 1,
                                  "transpose-not-dischargeable-run_state": 1}
    behind = Stats()
    with pytest.raises(oracles.OracleFailure) as raised:
        check_property(case, behind, unmask=True)
    failure = raised.value
    assert failure.oracle == "model-vs-path" and failure.known is None
    assert ir.primitive(failure.case.statements[failure.statement]) == "swap"
    assert behind.unmasked == 1


@premise(seen_on.applies("unsupported", "tpu-interpret-semaphore-read"),
         "the TPU interpreter reads semaphores here")
def test_unmasking_runs_a_case_again_on_the_tpu_interpreter_without_its_reads(plant):
    """A copy planted wrong in the TPU interpreter, in a case that reads
    its DMA semaphore's count, which the interpreter refuses whole
    (unsupported): unseen, unless the case runs again there without the
    read (``unmask``), where the planted copy is reported."""
    plant_copies_adding_one(plant)
    copy = dict(src=ir.View(1), dst=ir.View(2), sem=ir.View(0))
    case = ir.Case((ir.Ref("dma", ()), ir.Ref("int32", (2,)), ir.Ref("int32", (2,))), (
        DmaStart(**copy), DmaWait(**copy), Read(ir.View(0))), ("tpu_interpret",))
    masked = Stats()
    check_property(case, masked)
    assert masked.unsupported == {"tpu-interpret-semaphore-read": 1}
    behind = Stats()
    with pytest.raises(oracles.OracleFailure) as raised:
        check_property(case, behind, unmask=True)
    failure = raised.value
    assert failure.oracle == "model-vs-path" and failure.known is None
    assert [s.primitive for s in failure.case.statements] == ["dma_start", "dma_wait"]
    assert behind.unmasked == 1


@premise(seen_on.applies("known", "tpu-interpret-addupdate"), "no tpu-interpret-addupdate here")
def test_unmasking_runs_again_only_the_paths_a_known_crash_stopped():
    """A known crash of one path (the TPU interpreter's addupdate): the
    case runs again without its trigger there alone; every other path ran
    the whole program already."""
    example = known_findings.BY_ID["tpu-interpret-addupdate"].example
    case = dataclasses.replace(example, refs=(*example.refs, ir.Ref("int32", (2,))), body=(
        *example.body, Swap(ir.View(1), Fill(ir.Int(5), (2,)))), paths=ir.PATHS)
    report = oracles.check(case)
    assert known_findings.stopped(report.failures) == ("tpu_interpret",)
    stats = Stats()
    check_property(case, stats, unmask=True)
    ran = {o.path for o in report.outcomes}
    assert stats.unmasked == 1
    assert {p: n for p, n in stats.cases.items() if p != "case"} == {
        p: 2 if p == "tpu_interpret" else 1 for p in ran}

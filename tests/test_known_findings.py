"""One strict expected failure per known finding: when JAX fixes the bug the
test passes, strict xfail turns that red, and the entry must be removed."""
from dataclasses import replace

import jax
import pytest

from fuzz import ir, oracles
from fuzz.suppressions import known_findings, seen_on
from fuzz.triage import bisect
from fuzz.ops.control.loop import Loop
from fuzz.ops.control.pipeline import Pipeline
from fuzz.ops.control.wrap import Wrap
from fuzz.ops.ref.addupdate import AddUpdate
from fuzz.ops.ref.common import Iota
from fuzz.ops.ref.get import Get
from fuzz.ops.ref.inspect import Inspect
from fuzz.ops.ref.masked_load import MaskedLoad
from fuzz.ops.ref.swap import Swap
from hunting import needs, premise


def _expected(k):
    """Strict xfail, raising the oracle exception of one of ``k``'s symptoms."""
    classes = tuple(c for c in oracles.ORACLES if c.oracle in {o for o, _ in k.symptoms})
    return pytest.param(k, id=k.id, marks=pytest.mark.xfail(
        strict=True, reason="known bug in JAX", raises=classes))


@pytest.mark.parametrize("finding", [_expected(k) for k in known_findings.KNOWN])
def test_known_finding_is_fixed(finding):
    """Raises the finding's failure while JAX has the bug; anything else (a
    crash of the fuzzer) fails the suite."""
    report = oracles.check(finding.example)
    hits = [f for f in report.failures
            if known_findings.match(f, report.failures) is finding]
    if hits:
        raise hits[0]


def test_known_findings_have_unique_ids_and_valid_patterns():
    import re
    ids = [k.id for k in known_findings.KNOWN]
    assert len(ids) == len(set(ids))
    for k in known_findings.KNOWN:
        for oracle, rx in (*k.symptoms, *k.consequences):
            assert oracle in {c.oracle for c in oracles.ORACLES}
            re.compile(rx)


@premise(seen_on.applies("known", "wait-nondecrement-collapses-ref"),
         "no wait-nondecrement-collapses-ref here")
def test_a_wrong_read_is_a_consequence_where_it_is_read_not_where_it_was_written():
    # The signal writes r0[0, 0, 1]; the wait (decrement=False) then collapses
    # the ref; the read after it is wrong. The model blames the signal (its
    # last writer), before the root: the read is where the damage shows.
    from fuzz.ops.semaphore import Read, Signal, Wait
    at = [ir.View(0, (ir.At((ir.Int(0), ir.Int(0), ir.Int(j))),)) for j in (0, 1)]
    case = ir.Case((ir.Ref("int16", (1, 1, 2)),), (
        Signal(at[1], ir.Int(1)), Wait(at[0], ir.Int(0), decrement=False), Read(at[1])),
        paths=("abstract", "run_state"))
    report = oracles.check(case)
    wrong = [f for f in report.failures if f.oracle == "model-vs-path"]
    assert wrong and wrong[0].statement == 0 and wrong[0].seen_at == 2
    assert wrong[0].known == "wait-nondecrement-collapses-ref"
    assert all(f.known for f in report.failures)


@premise(seen_on.applies("known", "masked-swap-returns-transformed-ref"),
         "no masked-swap-returns-transformed-ref here")
@needs("jax.new_ref")   # which the partial-discharge oracle runs its programs on
def test_a_discharge_that_changes_a_refs_aval_is_not_discharged_partially():
    """Partial discharge of masked-swap-returns-transformed-ref's example has
    nothing right to agree with; on 0.9.1 to 0.10.2 XLA aborts the process
    evaluating it ("layout minor_to_major field contains 2 elements")."""
    report = oracles.check(known_findings.BY_ID["masked-swap-returns-transformed-ref"].example)
    assert "wrong aval" in report.not_applied.get("partial-discharge", ""), report.not_applied


def test_an_example_whose_oracle_cannot_run_here_is_not_measured_good(monkeypatch):
    """Up to 0.7.1 the partial-discharge oracle lacks jax.new_ref: an entry
    only it shows is n/a there, not 'good' (seen_on.json said good)."""
    from fuzz import compat
    entry = "wrapper-partial-discharge-discharges-kept-ref"
    if not seen_on.applies("known", entry):
        pytest.skip(f"{entry}'s example is {seen_on.verdict('known', entry)} here")
    assert bisect.judge_suppressions([entry])["known"][entry] == "bad"
    real = compat.lacking
    monkeypatch.setattr(compat, "lacking", lambda features: (
        f"JAX {jax.__version__} has no jax.new_ref (as if)" if "jax.new_ref" in features
        else real(features)))
    assert bisect.judge_suppressions([entry])["known"][entry] == \
        f"n/a: JAX {jax.__version__} has no jax.new_ref (as if)"


def test_the_masked_static_index_trigger_answers_on_nested_and_invalid_cases():
    """Two ways it once raised: a masked load nested in a loop (statement k
    is no top-level statement of the rewritten case) and an out-of-bounds
    view (no element to rewrite it to)."""
    k = known_findings.BY_ID["masked-ops-static-int-index"]
    dyn = ir.View(0, (ir.At((ir.Int(1, True),)),))
    nested = ir.Case((ir.Ref("int32", (2,)),), (
        Loop(ir.Int(1), (Get(ir.View(0, (ir.At((ir.Int(0),)),))),)), Loop(ir.Int(1), (MaskedLoad(dyn),))))
    assert [known_findings.has_trigger(k, nested, n) for n in range(4)] == [False] * 3 + [True]
    out_of_bounds = ir.Case((ir.Ref("int32", (2,)), ir.Ref("int32", (0,))), (
        MaskedLoad(dyn), Get(ir.View(1, (ir.At((ir.Int(-1),)),)))),
        expect=ir.ExpectedError("IndexError", "out of bounds"))
    assert not known_findings.has_trigger(k, out_of_bounds, 0)


@premise(seen_on.applies("known", "tpu-interpret-emit-pipeline-primitive"),
         "no tpu-interpret-emit-pipeline-primitive here")
def test_the_interpreter_hands_an_emit_pipeline_primitives_blocks_to_no_other_primitive():
    """Two README main jobs filed it as new (valid-runs-any-a9413b7d): on
    VMEM refs the TPU interpreter runs the primitive's body, but an
    addupdate or a debug callback of a block fails on the block it is
    handed; a store in its place runs."""
    block = ir.View(0, (ir.STEP, ir.At((ir.Int(0), ir.Slice(), ir.Slice()))))

    def case(stmt):
        return ir.Case((ir.Ref("float16", (2, 1, 4, 3), memory_space="vmem"),),
                       (Pipeline(2, (0,), (stmt,)),), ("tpu_interpret",))
    for stmt in (AddUpdate(block, Iota("float16", (4, 3), 1)), Inspect(ir.View(0, (ir.STEP,)))):
        failures = oracles.check(case(stmt)).failures
        assert failures and {f.known for f in failures} == {
            "tpu-interpret-emit-pipeline-primitive"}, (stmt, failures)
    assert not oracles.check(case(Swap(block, Iota("float16", (4, 3), 1)))).failures


@premise(seen_on.applies("known", "shard-map-of-a-ref-view-at-an-integer-index"),
         "no shard-map-of-a-ref-view-at-an-integer-index here")
def test_a_shard_map_of_a_pipeline_block_is_one_of_two_shard_map_bugs():
    """Two campaigns filed them as new (valid-runs-any-c19332cc,
    valid-runs-pipeline_body-db3b9864). Inlined, the map cannot take the
    block, a view at a traced index, as it cannot take any view at an
    integer index; as the primitive, the map's discharge gives the block
    back sharded, which the pipeline stores back."""
    row = ir.Case((ir.Ref("int32", (2, 3)),), (Wrap("shard_map", (Get(ir.View(0, (ir.STEP,))),),
                                                    (0,), ir.Int(1)),), ("jax_refs",))
    failures = oracles.check(row).failures
    assert failures and {f.known for f in failures} == {
        "shard-map-of-a-ref-view-at-an-integer-index"}, failures
    # The same row passed to jax.jit runs; a map inside, given the row, does not.
    jit = replace(row.body[0], via="jit")
    assert not oracles.check(replace(row, body=(jit,))).failures
    failures = oracles.check(replace(row, body=(replace(jit, body=(
        Wrap("shard_map", jit.body),)),))).failures
    assert failures and {f.known for f in failures} == {
        "shard-map-of-a-ref-view-at-an-integer-index"}, failures
    def case(inline):
        return ir.Case((ir.Ref("int32", (2, 3), memory_space="vmem"),), (Pipeline(2, (0,), (
            Wrap("shard_map", (Get(ir.View(0, (ir.STEP,))),)),), inline=inline),), ("abstract",))
    for inline, known in ((True, "shard-map-of-a-ref-view-at-an-integer-index"),
                          (False, "shard-map-dynamic-update-sharding")):
        failures = oracles.check(case(inline)).failures
        assert failures and {f.known for f in failures} == {known}, (inline, failures)

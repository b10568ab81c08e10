"""Transformations around ref programs: vmap of the eager jax.new_ref
program and of pallas_call against their calls one by one (vmap-stack), and
derivatives through refs against finite differences (grad-matches), each
with a planted wrong batching or AD rule."""
import subprocess
import sys

import jax.numpy as jnp
import pytest

from fuzz import ir, oracles, paths
from fuzz.suppressions import known_findings, seen_on
from fuzz.triage import filing
from fuzz.ops.control import Cond, Loop, Wrap
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.common import Fill
from fuzz.oracles import grad_matches, vmap_stack
from hunting import (batching_rule, hunt, lacked_here, needs_eager_at,
                     plant_get_jvp_doubling_its_tangent_eagerly, premise)
from strategies.programs import programs

R = ir.Ref("int32", (3,))
AT = [ir.View(0, (ir.At((ir.Int(k),)),)) for k in range(3)]


def _plant_swap_batching_flipping_its_value(plant):
    from jax._src.state import primitives as state_primitives
    swap_p = state_primitives.swap_p
    table, real = batching_rule(swap_p)

    def flipped(axis_data, args, dims, **params):
        ref, val, *idx = args
        if dims[1] is not None:
            val = jnp.flip(val, axis=dims[1])
        return real(axis_data, [ref, val, *idx], dims, **params)
    plant(table, swap_p, flipped)


def test_vmap_stack_catches_a_swap_batching_rule_mixing_up_batch_elements(plant):
    _plant_swap_batching_flipping_its_value(plant)
    f = hunt(vmap_stack.VmapMismatch, ("vmap-stack",), programs(
        max_semaphores=0, data_dtypes=("int32",), max_statements=3, paths=("eager",),
        x64=False, scoped=False, ops=(Loop, Get, Swap), transforms=("at",)), statements=2)
    assert f.path == "eager" and "one by one" in str(f)


@needs_eager_at
def test_a_cond_leaves_eager_vmap_out_but_not_pallas_calls(plant):
    """vmap refuses a cond with ref effects (JAX says so), so vmap-stack skips
    the eager program of a case with one; a batching bug in the same case is
    still caught on pallas_call, whose own batching rule takes the cond."""
    from jax._src.pallas.pallas_call import pallas_call_p
    table, real = batching_rule(pallas_call_p)

    def reversed_batch(*args, **kwargs):
        outs, dims = real(*args, **kwargs)
        return [jnp.flip(o, axis=d) if d is not None else o for o, d in zip(outs, dims)], dims
    case = ir.Case((R,), (Cond(ir.Int(1, True), ((Swap(AT[0], Fill(ir.Int(4, True))),), ())),),
                   ("eager", "pallas_call"))
    clean = oracles.check(case, oracles=("vmap-stack",))
    assert "vmap of a cond" in clean.not_applied["vmap-stack"] and not clean.failures
    plant(table, pallas_call_p, reversed_batch)
    caught = oracles.check(case, oracles=("vmap-stack",)).failures
    assert [(f.oracle, f.path) for f in caught] == [("vmap-stack", "pallas_call")]


def _plant_get_jvp_doubling_its_tangent(plant):
    from jax._src.interpreters import ad
    from jax._src.state import primitives as state_primitives
    get_p = state_primitives.get_p
    real = ad.primitive_jvps[get_p]

    def doubled(primals, tangents, **params):
        out, tangent = real(primals, tangents, **params)
        return out, 2 * tangent
    plant(ad.primitive_jvps, get_p, doubled)


def _float_programs(*ops):
    """Eager programs of float refs indexed with .at[] for the AD plants, with
    static indices only: a traced index is read from an int ref, and two known
    AD crashes on those (eager-jvp-of-integer-new-ref,
    ref-index-broadcast-has-no-ad-or-batching-rule) would hide the plant."""
    return programs(max_semaphores=0, data_dtypes=("float32",), max_statements=3,
                    paths=("eager",), x64=False, scoped=False, ops=ops, transforms=("at",),
                    dynamic=False)


def test_grad_matches_catches_a_get_jvp_doubling_its_tangent(plant):
    _plant_get_jvp_doubling_its_tangent(plant)
    f = hunt(grad_matches.GradMismatch, ("grad-matches",), _float_programs(Loop, Get, Swap, AddUpdate),
             statements=2)
    # Every program reads its refs out (jax.freeze), so any store will do.
    assert f.path == "eager" and f.message.startswith("fwd derivatives of r0")


@needs_eager_at
def test_grad_matches_leaves_out_programs_without_float_refs():
    case = ir.Case((R,), (Swap(AT[0], Fill(ir.Int(4, True))),), ("eager",))
    report = oracles.check(case, oracles=("grad-matches",))
    assert "no float32 or float64 ref" in report.not_applied["grad-matches"]


@needs_eager_at
def test_a_forward_mode_bug_beside_the_checkpoint_finding_is_reported(plant):
    """checkpoint-vjp-drops-ref-writes matches reverse-mode mismatches only:
    a planted JVP bug in a case that has the finding's trigger is new."""
    f32 = ir.Ref("float32", (2,))
    at = [ir.View(0, (ir.At((ir.Int(k),)),)) for k in range(2)]
    example = ir.Case((f32,), (Wrap("checkpoint", (Get(at[0]), Swap(at[1], ir.Result(1)))),),
                      ("eager",))
    assert [f.known for f in oracles.check(example).failures] == [
        "checkpoint-vjp-drops-ref-writes"]
    _plant_get_jvp_doubling_its_tangent(plant)
    failures = oracles.check(example).failures
    assert [(f.oracle, f.known) for f in failures] == [("grad-matches", None)]
    assert failures[0].message.startswith("fwd derivatives")


@needs_eager_at
def test_grad_matches_catches_a_jvp_rule_wrong_only_eagerly(plant):
    """The eager path's program is differentiated eagerly too, once it passes
    under jit: a rule wrong on concrete refs only is caught there."""
    plant_get_jvp_doubling_its_tangent_eagerly(plant)
    f = hunt(grad_matches.GradMismatch, ("grad-matches",), _float_programs(Get, Swap, AddUpdate),
             statements=2)
    assert f.path == "eager" and f.message.startswith("eagerly, fwd derivatives of r0"), f
    assert f.known is None
    # (its reproducer differentiates eagerly: no jax.jit around the program)
    assert "@jax.jit" not in f.comparison(f.case, "eager").source


@needs_eager_at
def test_a_jvp_bug_beside_an_eager_integer_ref_is_reported(plant):
    """eager-jvp-of-integer-new-ref matches the eager way only: beside its
    trigger (an int32 ref), a planted JVP bug shows under jit, and is new."""
    f32, i32 = ir.Ref("float32", (2,)), ir.Ref("int32", ())
    case = ir.Case((f32, i32), (Get(ir.View(0, (ir.At((ir.Int(0),)),))), Get(ir.View(1))),
                   ("eager",))
    known = [f.known for f in oracles.check(case, oracles=("grad-matches",)).failures]
    live = known_findings.BY_ID["eager-jvp-of-integer-new-ref"] in known_findings.KNOWN
    assert known == (["eager-jvp-of-integer-new-ref"] if live else [])
    _plant_get_jvp_doubling_its_tangent(plant)
    (caught,) = oracles.check(case, oracles=("grad-matches",)).failures
    assert caught.known is None and caught.message.startswith("fwd derivatives of r0")


def test_a_masked_load_of_a_ref_without_tangent_is_the_load_jvp_finding():
    """With a mask the load's tangent tree is still one leaf (the ref's) short."""
    from fuzz.ops.ref import MaskedLoad
    from fuzz.ops.ref.common import Mask
    k = known_findings.BY_ID["run-state-jvp-of-load-without-tangent"]
    if k not in known_findings.KNOWN:
        pytest.skip("not live on this JAX")
    case = ir.Case((ir.Ref("float32", ()), ir.Ref("int16", (2,))),
                   (Get(ir.View(0)), MaskedLoad(ir.View(1), Mask((2,), 2))), ("run_state",))
    assert k.id in [f.known for f in oracles.check(case, oracles=("grad-matches",)).failures]


def test_a_masked_store_to_a_ref_without_tangent_is_the_same_finding():
    """pltpu.store's JVP rule (_swap_jvp) binds on the ref's None tangent as
    pltpu.load's does: one defect, one entry (a clean-clone campaign once
    filed this face as new)."""
    from fuzz.ops.ref import MaskedStore
    from fuzz.ops.ref.common import Iota
    k = known_findings.BY_ID["run-state-jvp-of-load-without-tangent"]
    if k not in known_findings.KNOWN:
        pytest.skip("not live on this JAX")
    case = ir.Case((ir.Ref("float32", ()), ir.Ref("int32", (2,))),
                   (Get(ir.View(0)), MaskedStore(ir.View(1), Iota("int32", (2,), 1))), ("run_state",))
    assert [f.known for f in oracles.check(case, oracles=("grad-matches",)).failures] == [k.id]


def test_grad_matches_holds_on_values_far_from_zero():
    """Finite differences at float32 lose ~1% near 20 with a small step: the
    oracle's step keeps real JAX clean there (it once reported this case)."""
    from fuzz.ops.ref.common import Iota
    case = ir.Case((ir.Ref("float32", ()),), (AddUpdate(ir.View(0), Iota("float32", (), 17)),),
                   ("eager",))
    report = oracles.check(case, oracles=("grad-matches",))
    lacked_here(report)
    assert report.compared.get("grad-matches") and not report.failures, report.failures


@needs_eager_at
def test_a_custom_vjp_leaves_grad_out_but_a_batching_bug_beside_it_is_caught(plant):
    """JAX differentiates a custom_vjp function only with respect to its
    arguments, and the block closes over its refs: grad-matches does not
    apply (JAX says so). vmap-stack still checks the same case."""
    f32 = ir.View(1, (ir.At((ir.Int(0),)),))
    case = ir.Case((R, ir.Ref("float32", (2,))),
                   (Wrap("custom_vjp", (Get(f32),)), Swap(AT[1], Fill(ir.Int(4, True)))), ("eager",))
    clean = oracles.check(case, oracles=("grad-matches", "vmap-stack"))
    assert "custom_vjp" in clean.not_applied["grad-matches"] and not clean.failures
    _plant_swap_batching_flipping_its_value(plant)
    caught = oracles.check(case, oracles=("grad-matches", "vmap-stack")).failures
    assert [(f.oracle, f.path, f.known) for f in caught] == [("vmap-stack", "eager", None)]


@needs_eager_at
def test_vmap_stack_nests_two_levels_with_any_axes():
    """vmap of vmap, operands and results batched along axes other than 0."""
    case = ir.Case((R, ir.Ref("int32", (2, 2))),
                   (Swap(AT[0], Fill(ir.Int(4, True))),
                    AddUpdate(ir.View(1, (ir.At((ir.Int(1, True),)),)), Fill(ir.Int(3, True), (2,))),
                    Get(AT[2])), ("eager", "pallas_call"))
    report = oracles.check(case, oracles=("vmap-stack",))
    assert report.compared.get("vmap-stack") == 2 and not report.failures, report.failures
    for path in ("eager", "pallas_call"):
        call, args = paths.load(case, path)["function"]()
        import jax
        leaves = jax.tree_util.tree_leaves(args)
        ins, outs = vmap_stack.vmap_axes(path, leaves, jax.eval_shape(call, *args))
        assert len(ins) == 2 and any(a not in (0, None) for level in ins for a in level)
        assert any(a != 0 for level in outs for a in level)


@premise(seen_on.applies("known", "run-state-reverse-mode-fails"),
         "reverse mode of run_state programs works (run-state-reverse-mode-fails)")
def test_grad_matches_differentiates_run_state_programs_too(plant):
    """pl.run_state programs are checked forward; reverse mode fails on every
    one of them (a known finding), so a forward-mode bug is still caught."""
    f32 = ir.Ref("float32", (2,))
    at = [ir.View(0, (ir.At((ir.Int(k),)),)) for k in range(2)]
    case = ir.Case((f32,), (Get(at[0]), Swap(at[1], ir.Result(0))), ("run_state",))
    clean = oracles.check(case, oracles=("grad-matches",))
    assert clean.compared.get("grad-matches") == 1
    assert [f.known for f in clean.failures] == ["run-state-reverse-mode-fails"]
    _plant_get_jvp_doubling_its_tangent(plant)
    caught = oracles.check(case, oracles=("grad-matches",)).failures
    assert [(f.path, f.known) for f in caught] == [("run_state", None)]
    assert caught[0].message.startswith("fwd derivatives of r0")


def test_grad_matches_catches_a_get_transpose_doubling_its_cotangent(plant):
    """A transpose rule's bug shows in reverse mode only: forward mode and
    jax.linearize (which transposes nothing) are right."""
    from jax._src import ad_util
    from fuzz import compat
    table, get_p = compat.transformation_rules()["get:transpose"]
    real = table[get_p]

    def doubled(g, *args, **params):
        return real(g if type(g) is ad_util.Zero else 2 * g, *args, **params)
    plant(table, get_p, doubled)
    f = hunt(grad_matches.GradMismatch, ("grad-matches",), _float_programs(Get, Swap, AddUpdate),
             statements=2)
    assert f.message.startswith("rev derivatives of r"), f.message


@premise(seen_on.applies("known", "vmap-while-batched-count-ref-off-leading-axis-silent"),
         "vmap of such a loop is right here")
def test_a_vmap_finding_is_filed_with_a_reproducer_that_calls_vmap(tmp_path):
    """The oracle's own comparison is the reproducer and the snippet: run
    alone in a fresh interpreter, it calls jax.vmap next to the calls one by
    one and exits 1 while they differ (the plain program would print right
    values, and the finding would be flaky)."""
    k = known_findings.BY_ID["vmap-while-batched-count-ref-off-leading-axis-silent"]
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    finding, _ = filing.record(failure, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                               minimize=False)
    repro = finding.reproducer
    assert (finding.status, repro["status"], repro["path"]) == ("new", "reproduces", "eager")
    assert "jax.vmap(g, in_axes=" in repro["script"] and repro["comparison"]
    md = (tmp_path / "r" / f"{finding.id}.md").read_text()
    assert "print('jax.vmap (2 levels):', actual())" in md
    assert "# Bug: jax.vmap (2 levels): " in md and "expected, as by the calls one by one: " in md
    code = md.split("```python\n")[1].split("```")[0]   # the snippet runs alone and shows it
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    shown = dict(line.split(": ", 1) for line in ran.stdout.splitlines() if ": [" in line)
    assert shown["jax.vmap (2 levels)"] != shown["the calls one by one"], ran.stdout + ran.stderr


@premise(seen_on.applies("known", "checkpoint-vjp-drops-ref-writes"),
         "reverse mode through jax.checkpoint keeps ref writes here")
def test_a_grad_finding_is_filed_with_a_reproducer_that_differentiates(tmp_path):
    """A wrong derivative's reproducer differentiates as the oracle did and
    shows both sides (here jax.linearize's tangents against jax.jvp's); its
    snippet runs alone and prints them."""
    k = known_findings.BY_ID["checkpoint-vjp-drops-ref-writes"]
    failure = next(f for f in oracles.check(k.example).failures if f.known == k.id)
    finding, _ = filing.record(failure, corpus_dir=tmp_path / "c", reports_dir=tmp_path / "r",
                               minimize=False)
    repro = finding.reproducer
    assert (repro["status"], repro["path"]) == ("reproduces", "eager"), repro
    assert "jax.linearize(of_floats" in repro["script"]
    md = (tmp_path / "r" / f"{finding.id}.md").read_text()
    code = md.split("```python\n")[1].split("```")[0]
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    shown = dict(line.split(": ", 1) for line in ran.stdout.splitlines() if ": [" in line)
    assert ran.returncode == 0 and shown["jax.linearize"] != shown["jax.jvp"], \
        ran.stdout + ran.stderr


@premise(seen_on.applies("known", "custom-vmap-vjp-drops-ref-writes"),
         "custom-vmap-vjp-drops-ref-writes is not live here")
def test_custom_vmaps_documented_lack_of_reverse_mode_hides_no_wrong_primal():
    """custom_vmap functions "do not support reverse-mode autodiff" (its
    docstring): grad-matches leaves their reverse-mode derivatives alone
    (a store of what was read: the transpose rule raises, and is no
    finding), but still compares the primal value jax.vjp and
    jax.linearize return, where a dropped store is a bug."""
    documented = ir.Case((ir.Ref("float32", ()),), (Wrap("custom_vmap", (
        Get(ir.View(0)), Swap(ir.View(0), ir.Result(1)))),), ("eager",))
    report = oracles.check(documented)
    assert not report.failures and report.compared["grad-matches"] == 1, report.failures
    wrong = known_findings.BY_ID["custom-vmap-vjp-drops-ref-writes"].example
    (failure,) = [f for f in oracles.check(wrong).failures if f.oracle == "grad-matches"]
    assert "rev: the value of r0" in failure.message and "differs from the plain call" in \
        failure.message, failure.message


def test_a_batched_pl_ds_start_is_refused_under_vmap_and_hides_no_other_bug(plant):
    """JAX says it does not vmap a pl.ds slice whose start is batched ("No
    support for vmapping over nontrivial slices just yet"): vmap-stack leaves
    such a program alone. A wrong get rule beside it still shows."""
    from jax._src.state import primitives as state_primitives
    from fuzz import compat
    case = ir.Case((ir.Ref("int32", (4,)),), (Get(ir.View(0, (ir.At((
        ir.Ds(ir.Int(1, True), 1),)),))),), paths=("eager", "jax_refs", "pallas_call"))
    report = oracles.check(case)
    assert "nontrivial" not in str(report.failures) and "vmap-stack" in report.not_applied
    get_p = state_primitives.get_p

    def around(call, in_avals, values, params):
        new_invals, out = call()
        return new_invals, out + jnp.ones_like(out)
    plant(compat.discharge_rules(), get_p, compat.wrap_rule(compat.discharge_rules()[get_p], around))
    caught = oracles.check(case).failures
    assert any(f.oracle == "model-vs-path" and f.path in ("jax_refs", "pallas_call")
               for f in caught), caught


def test_a_broadcast_index_fails_under_grad_and_vmap_as_one_known_bug():
    """ref-index-broadcast-has-no-ad-or-batching-rule has two faces, one
    root cause (broadcast_to_p has no transformation rules): reverse-mode AD
    and vmap of r[i, jnp.array([0])] with i traced are both matched to it."""
    entry = known_findings.BY_ID["ref-index-broadcast-has-no-ad-or-batching-rule"]
    if not seen_on.applies("known", entry.id):
        pytest.skip(f"its example is {seen_on.verdict('known', entry.id)} on this JAX")
    report = oracles.check(entry.example, oracles=("grad-matches", "vmap-stack"))
    assert {(f.oracle, f.known) for f in report.failures} == {
        ("grad-matches", entry.id), ("vmap-stack", entry.id)}


@pytest.mark.parametrize("indices, broadcast", [
    ((ir.Int(0, True), ir.IntArray((0,))), True),          # a traced scalar beside an array
    ((ir.IntArray((0,), True), ir.IntArray((0, 1))), True),  # a traced array of another length
    ((ir.Int(0), ir.IntArray((0,))), False),               # static: a constant, no tangent
    ((ir.Int(0, True), ir.Int(1)), False),                 # no array: nothing to broadcast
    ((ir.IntArray((0, 1), True), ir.IntArray((0, 1))), False)])  # already of the shape
def test_the_broadcast_index_trigger_wants_a_traced_index_to_broadcast(indices, broadcast):
    entry = known_findings.BY_ID["ref-index-broadcast-has-no-ad-or-batching-rule"]
    case = ir.Case((ir.Ref("float32", (2, 2)),), (Get(ir.View(0, (ir.At(indices),))),), ("eager",))
    assert entry.trigger(case, 0) is broadcast

"""Coverage of the ref primitives' transformation rules: the batching, JVP
and transpose rules of get, swap and addupdate are counted while the
fuzzer's oracles run them, and the tables JAX finds them in are left as
they were."""
import inspect
import json

import jax
import pytest

from fuzz import cli, compat, exits, ir, oracles
from fuzz.oracles import probes
from fuzz.ops.ref import AddUpdate, Get, Swap
from fuzz.ops.ref.common import Iota
from hunting import needs_eager_at

PRIMITIVES = ("get", "swap", "addupdate")
F32 = ir.Ref("float32", (3,))
AT = [ir.View(0, (ir.At((ir.Int(k, True),)),)) for k in range(3)]
# A read, a store of what it read and an accumulation, at dynamic indices:
# one statement of each primitive, all differentiable.
CASE = ir.Case((F32,), (Get(AT[0]), Swap(AT[1], ir.Result(0)),
                        AddUpdate(AT[2], Iota("float32", (), 2))), ("eager",))


def test_this_release_registers_every_kind_for_every_primitive():
    assert set(compat.transformation_rules()) == {
        f"{p}:{kind}" for p in PRIMITIVES for kind in ("batch", "jvp", "transpose")}


@needs_eager_at
@pytest.mark.parametrize("oracle, kinds", [
    ("vmap-stack", ("batch",)),              # jit(vmap(...)) of the eager program
    ("grad-matches", ("jvp", "transpose")),  # forward and reverse mode
])
def test_an_oracle_reaches_the_rules_of_its_transformation(oracle, kinds):
    jax.clear_caches()   # a cached trace calls no rule
    with probes.probing() as probe:
        report = oracles.check(CASE, oracles=(oracle,))
    # (a known finding may stop it after the rules ran: eagerly, the dyn ref
    # of dynamic indices is eager-jvp-of-integer-new-ref's trigger)
    new = [f for f in report.failures if f.known is None]
    assert report.compared.get(oracle) and not new, report.failures
    reached = {name for name in probe.rule_calls if ":" in name}
    assert reached == {f"{p}:{kind}" for p in PRIMITIVES for kind in kinds}


def test_probing_restores_the_transformation_rules_also_on_error():
    before = {name: table[prim] for name, (table, prim) in compat.transformation_rules().items()}

    def now():
        return {name: table[prim] for name, (table, prim) in compat.transformation_rules().items()}
    with pytest.raises(RuntimeError):
        with probes.probing():
            for name, wrapped in now().items():   # counted, yet the same rule to JAX
                assert wrapped is not before[name] and wrapped.__wrapped__ is before[name]
                assert inspect.signature(wrapped) == inspect.signature(before[name])
            raise RuntimeError("boom")
    assert all(rule is before[name] for name, rule in now().items())

@needs_eager_at

def test_a_campaign_reports_the_transformation_rules_it_reached(capsys, tmp_path):
    """Through the worker and the supervisor into summary.json, the text
    summary and summary.html: with only vmap-stack named, batching rules
    alone run, and each rule not run says why."""
    code = cli.main(["run", "--max-examples", "30", "--workers", "1", "--quiet", "--no-verify",
                     "--no-minimize", "--seed", "1", "--strategies", "valid",
                     "--paths", "eager", "--oracles", "vmap-stack",
                     "--corpus", str(tmp_path / "corpus"), "--reports", str(tmp_path / "reports"),
                     "--out", str(tmp_path / "out"), "--database", str(tmp_path / "db")])
    assert code in (exits.EXIT_CLEAN, exits.EXIT_FOUND)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    cov = summary["coverage"]
    registered = set(compat.transformation_rules())
    assert cov["transform_rules_total"] == len(registered)
    assert set(cov["transform_rules_run"]) | set(cov["transform_rules_not_run"]) == registered
    assert any(rule.endswith(":batch") for rule in cov["transform_rules_run"]), \
        "no case reached a batching rule"
    # Only vmap-stack runs: no differentiation rule, no other oracle's comparison.
    assert all(rule.endswith(":batch") for rule in cov["transform_rules_run"])
    assert set(summary["cases_per_oracle"]) <= {"vmap-stack"}, summary["cases_per_oracle"]
    assert set(cov["transform_why_not_run"]) == set(cov["transform_rules_not_run"])
    assert all("grad-matches" in why for rule, why in cov["transform_why_not_run"].items()
               if not rule.endswith(":batch"))
    out = capsys.readouterr().out
    assert f"transformation rules exercised: {len(cov['transform_rules_run'])} of 9" in out
    html = (tmp_path / "out" / "summary.html").read_text()
    assert cov["transform_rules_not_run"] and all(
        rule in html for rule in cov["transform_rules_not_run"])

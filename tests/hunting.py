"""What the planted-bug tests share: a rule planted wrong, and the hunt in
which Hypothesis finds the failure it causes, then the IR reduction a
finding gets, which shrinks it."""
import functools
import re

import jax
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from jax._src.interpreters import ad
from jax._src.state import discharge as state_discharge, primitives as state_primitives

from fuzz import compat, oracles
from fuzz.suppressions import known_findings, seen_on
from fuzz.triage import findings, minimize

# The eager path (jax.new_ref programs run op by op) takes views with .at[]
# from JAX 0.12 on (fuzz/paths/eager.py says why not before): tests built on
# it have nothing to run before.
needs_eager_at = pytest.mark.skipif(
    compat.jax_version()[:2] < (0, 12), reason=f"JAX {jax.__version__}'s eager jax.Ref has no .at[]")


def needs(*features):
    """Skip where the running JAX lacks one of ``features`` (`fuzz.compat`'s
    names), saying which: the test's subject is not there to test."""
    why = compat.lacking(features)
    return pytest.mark.skipif(why is not None, reason=why or "")


def plants_rule(*primitives):
    """Skip where a test that plants into the discharge rules of
    ``primitives`` (by name) finds one not registered as a full rule there:
    none at all, or a partial one (``_partial_discharge_rules``, before 0.8),
    whose calling convention the plant does not wrap."""
    full = {str(p) for p in compat.discharge_rules()}
    missing = [p for p in primitives if p not in full]
    return pytest.mark.skipif(bool(missing), reason=(
        f"JAX {jax.__version__} registers no full discharge rule for {', '.join(missing)} "
        "(none, or a partial one), which this plant wraps"))


def _lacked(report) -> set[str]:
    return {p for p, why in report.skipped.items() if why.startswith(f"JAX {jax.__version__}")}


def lacked_here(report) -> set[str]:
    """The paths a report skipped because the running release lacks what
    they need (`fuzz.compat.lacking`'s "JAX X has no ..."); the test skips
    if that is every path it asked for."""
    lacked = _lacked(report)
    asked = {o.path for o in report.outcomes} | set(report.skipped)
    if lacked and lacked >= asked:
        pytest.skip("; ".join(sorted(set(report.skipped.values()))))
    return lacked


def as_on_newest(failures) -> list:
    """The ``failures`` a test written against the newest release expects
    on any release: less the known findings that the newest release measured
    (``fuzz/suppressions/seen_on.json``) no longer has, an older release's own bugs, each
    still recognised as the known finding it is."""
    newest = (float("inf"),)   # past every measured release: the newest one's verdict
    return [f for f in failures
            if f.known is None or seen_on.verdict("known", f.known, newest) in (None, "bad")]


def known_failure(known_id: str):
    """The failure of a known finding's example that is that finding; the
    test skips where the running release has not that bug."""
    if not seen_on.applies("known", known_id):
        pytest.skip(f"JAX {jax.__version__}: {known_id}'s example is "
                    f"{seen_on.verdict('known', known_id)} here")
    report = oracles.check(known_findings.BY_ID[known_id].example)
    return next(f for f in report.failures if f.known == known_id)


def premise(holds: bool, why: str):
    """Skip where the JAX internals a plant patches are not there: ``why``."""
    return pytest.mark.skipif(not holds, reason=f"JAX {jax.__version__}: {why}")


def rule_returning(prim, change):
    """The real discharge rule of ``prim`` with ``change`` applied to each new
    ref value it returns."""
    def around(call, in_avals, values, params):
        new_invals, outs = call()
        return [None if v is None else change(v) for v in new_invals], outs
    return compat.wrap_rule(compat.discharge_rules()[prim], around)


def batching_rule(prim):
    """(the table holding ``prim``'s batching rule, the rule): JAX 0.12 keeps
    some rules with the "fancy" (axis-aware) batchers."""
    from jax._src.interpreters import batching
    table = getattr(batching, "fancy_primitive_batchers", {})
    table = table if prim in table else batching.primitive_batchers
    return table, table[prim]


def hunt(cls, names, strategy, *, primitive=None, max_examples=100, statements=3, match=None,
         refs=2):
    """The failure of class ``cls`` (of ``primitive``, and with a message
    matching the regex ``match``, if given) found with
    only the oracles ``names`` running (the others would find the planted bug
    too, and cost time), shrunk to at most ``statements`` statements over at most ``refs`` refs.

    The finding's own minimizer (fuzz.triage.minimize, as a campaign uses it)
    shrinks it first; Hypothesis' shrinker runs too only where that is not
    enough (it costs tens of seconds a hunt)."""
    for phases in ((Phase.explicit, Phase.generate),
                   (Phase.explicit, Phase.generate, Phase.shrink)):
        f = _minimized(_found(cls, names, strategy, primitive, match, max_examples, phases),
                       names)
        if len(f.case.body) <= statements and len(f.case.refs) <= refs:
            return f
    raise AssertionError(f"not shrunk to {statements} statements: {f.case}")


def _found(cls, names, strategy, primitive, match, max_examples, phases):
    @settings(max_examples=max_examples, deadline=None, database=None,
              report_multiple_bugs=False, suppress_health_check=list(HealthCheck),
              phases=phases)
    @seed(0)
    @given(strategy)
    def prop(case):
        report = oracles.check(case, oracles=names)
        lacked.update(report.skipped[p] for p in _lacked(report))
        # (a case of the planted primitive, where the hunt names one)
        ran[0] |= any(o.error is None for o in report.outcomes) and (
            primitive is None or primitive in {s.primitive for s in case.statements})
        for f in report.failures:
            if (isinstance(f, cls) and primitive in (None, f.primitive)
                    and (match is None or re.search(match, f.message))
                    and not known_findings.match(f, report.failures)):
                raise f

    lacked, ran = set(), [False]
    try:
        prop()
    except cls as e:
        return e
    if lacked and not ran[0]:   # no case of it ran: the hunt has nothing to hunt in
        pytest.skip("; ".join(sorted(lacked)))
    pytest.fail(f"DID NOT RAISE {cls}")


def _minimized(found, names):
    """``found``, rediscovered on its case as `fuzz.triage.minimize` reduces it."""
    sig = findings.signature(found)

    def same(case):
        return next((g for g in oracles.check(case, oracles=names).failures
                     if findings.signature(g) == sig), None)
    return same(minimize.minimize(found.case, lambda c: same(c) is not None).case)


def plant_addupdate_twice_while_a_ref_is_kept(plant):
    """Plant: while a discharge keeps some ref (``should_discharge`` not all
    True), addupdate's rule adds twice; a full discharge is right."""
    addupdate_p = state_primitives.addupdate_p
    real_rule = compat.discharge_rules()[addupdate_p]

    def twice(call, in_avals, values, params):
        new_invals, outs = call()
        return [2 * v - values[0] if i == 0 and v is not None else v
                for i, v in enumerate(new_invals)], outs
    wrong = compat.wrap_rule(real_rule, twice)
    real_discharge = state_discharge.discharge_state

    # (with the real one's signature, which the abstract path reads: JAX < 0.10.2 takes consts)
    @functools.wraps(real_discharge)
    def discharge_state(*args, should_discharge=True, **kwargs):
        partial = not (should_discharge is True or all(should_discharge))
        rules = compat.discharge_rules()
        rules[addupdate_p] = wrong if partial else real_rule
        try:
            return real_discharge(*args, should_discharge=should_discharge, **kwargs)
        finally:
            rules[addupdate_p] = real_rule
    plant(state_discharge, "discharge_state", discharge_state)


def plant_get_jvp_doubling_its_tangent_eagerly(plant):
    """get's JVP doubling the tangent only on a concrete ref (eagerly): under
    jax.jit its primal is a tracer, and the rule is right."""
    get_p = state_primitives.get_p
    real = ad.primitive_jvps[get_p]

    def doubled(primals, tangents, **params):
        out, tangent = real(primals, tangents, **params)
        return out, tangent if isinstance(primals[0], jax.core.Tracer) else 2 * tangent
    plant(ad.primitive_jvps, get_p, doubled)


def plant_copies_adding_one(plant):
    """The TPU interpreter's copies deliver what they read plus one."""
    # (here, not at import: a release without this module skips the test)
    from jax._src.pallas.mosaic.interpret import interpret_pallas_call as interpreter
    real = interpreter.DMA.execute_read

    def wrong(self):
        real(self)
        if self.data is not None:
            self.data = (self.data + 1).astype(self.data.dtype)
    plant(interpreter.DMA, "execute_read", wrong)

"""Hypothesis profiles (dev is the default; pick one with --hypothesis-profile)
and the session summary of known findings hit by the properties."""
import os

import jax
import pytest
from hypothesis import HealthCheck, Phase, Verbosity, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile(
    "dev", max_examples=60, deadline=None, suppress_health_check=_SLOW_OK)
# Deterministic, no database; the whole suite runs in under 8 minutes on 2
# cores with `-n auto` (`python -m fuzz.bench_suite` measures it).
settings.register_profile(
    "ci", max_examples=150, deadline=None, derandomize=True, database=None,
    print_blob=True, suppress_health_check=_SLOW_OK)
settings.register_profile(
    "nightly", max_examples=5000, deadline=None, suppress_health_check=_SLOW_OK,
    phases=list(Phase), verbosity=Verbosity.normal)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def plant(monkeypatch):
    """plant(obj, name, value): patch a JAX rule (or helper) for this test
    only, JAX caches cleared on the way in and out so no trace made with or
    without the patch is reused."""
    def plant(obj, name, value):
        jax.clear_caches()
        (monkeypatch.setitem if isinstance(obj, dict) else monkeypatch.setattr)(obj, name, value)
    yield plant
    monkeypatch.undo()
    jax.clear_caches()


_COUNTERS = ("cases", "known", "compared", "unsupported")


def pytest_sessionfinish(session):
    """Under xdist, a worker hands its counts to the controller, which prints them."""
    from fuzz.campaign.property import SESSION
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["discharge_fuzz"] = {
            **{name: dict(getattr(SESSION, name)) for name in _COUNTERS},
            "undefined": SESSION.undefined}


def pytest_testnodedown(node, error):
    from fuzz.campaign.property import SESSION
    counts = getattr(node, "workeroutput", {}).get("discharge_fuzz")
    if counts:
        for name in _COUNTERS:
            getattr(SESSION, name).update(counts[name])
        SESSION.undefined += counts["undefined"]


def pytest_terminal_summary(terminalreporter):
    from fuzz.suppressions import known_findings
    from fuzz.campaign.property import SESSION
    if not SESSION.total:
        return
    tr = terminalreporter
    tr.section("discharge-fuzz")
    tr.write_line(f"{SESSION.total} cases checked by the properties; per path: "
                  + ", ".join(f"{p} {n}" for p, n in sorted(SESSION.cases.items()) if p != "case"))
    for kid, n in SESSION.known.most_common():
        tr.write_line(f"known finding hit {n}x: {kid} - {known_findings.BY_ID[kid].description}")
    if SESSION.undefined:
        tr.write_line(f"{SESSION.undefined} valid cases had no defined meaning "
                      f"(a wait that would block forever): compared path to path only")
    if SESSION.compared:
        tr.write_line("values compared per oracle: " + ", ".join(
            f"{o} {n}" for o, n in sorted(SESSION.compared.items())))
    for uid, n in SESSION.unsupported.most_common():
        tr.write_line(f"unsupported by a path {n}x: {uid}")

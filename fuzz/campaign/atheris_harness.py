#!/usr/bin/env python3
"""Coverage-guided fuzzing: atheris (libFuzzer) drives the campaign's
Hypothesis test through ``test.hypothesis.fuzz_one_input``, the pattern of
OSS-Fuzz's Python harnesses. Only JAX's discharge machinery is instrumented
(state, Pallas primitives and interpreters), so coverage feedback stays cheap.

Standalone, libFuzzer's own options and corpus directories work:

    fuzz/campaign/atheris_harness.py -max_total_time=60 -runs=1000 my_corpus/
    fuzz/campaign/atheris_harness.py -minimize_crash=1 -runs=100 crash-<sha>

It replays known failures first (the example database's, then the corpus
regressions), then fuzzes; a new failure stops it as a libFuzzer crash (the
input is kept as ``crash-*``). Campaign workers (``discharge-fuzz run --mode
atheris``) use the same functions but file each failure and go on.
"""
from __future__ import annotations

import inspect
import os
import sys

if __package__ in (None, ""):   # run as a script: make `fuzz` importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import atheris
from hypothesis import Phase

from fuzz import oracles
from fuzz.campaign import DEFAULT_STRATEGIES
from fuzz.campaign.database import open_database
from fuzz.campaign.property import (REPLAY, Stats, campaign_test, check_property,
                                    filed_signatures, replay_corpus, replay_database)
from fuzz.triage import findings

# Module prefixes whose code gets coverage instrumentation.
DISCHARGE_MODULES = ("jax._src.state", "jax._src.pallas.primitives",
                     "jax._src.pallas.hlo_interpreter", "jax._src.pallas.pallas_call",
                     "jax._src.pallas.mosaic.primitives", "jax._src.pallas.mosaic.interpret")


# Full-length inputs from the start: libFuzzer's slow growth from a few bytes
# would give Hypothesis nothing but empty programs for minutes. (libFuzzer
# takes the last of repeated flags, so a user's own flags still win.)
INPUT_LENGTH = ("-len_control=0", "-max_len=2048")


def instrument_discharge_modules() -> int:
    """Instrument the functions (and methods) of JAX's discharge-related
    modules in place; JAX is imported already, so `instrument_imports` would
    miss them. Returns how many functions were instrumented."""
    count = 0
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(DISCHARGE_MODULES):
            continue
        for obj in list(vars(module).values()):
            functions = [obj] if inspect.isfunction(obj) else (
                [v for v in vars(obj).values() if inspect.isfunction(v)]
                if inspect.isclass(obj) else [])
            for f in functions:
                if f.__module__ == name:
                    atheris.instrument_func(f)
                    count += 1
    return count


NO_TIMEOUT_S = 10**7   # seconds: longer than any campaign


def fuzz(test, *, on_failure, on_error, should_stop, on_stop, stop_exception, seed: int,
         corpus_dir: str, artifact_dir: str):
    """Fuzz until ``should_stop()`` or ``stop_exception`` (then ``on_stop()``,
    which must not return): each input is one
    example of ``test``; a failure goes to ``on_failure`` and fuzzing goes on;
    any other exception (the fuzzer's own bug) goes to ``on_error``.
    Signals and crashes are left to the campaign's supervisor (libFuzzer's
    handlers are off), so a dying worker dies of its own signal."""
    os.makedirs(corpus_dir, exist_ok=True)

    def one_input(data: bytes):
        if should_stop():
            on_stop()
        # Nothing may reach libFuzzer, which would keep it as a crash (exit
        # code 77): not a stop, nor an error while a failure is being filed.
        try:
            try:
                test.hypothesis.fuzz_one_input(data)
            except oracles.OracleFailure as f:
                on_failure(f)
        except stop_exception:
            on_stop()
        except Exception as e:  # noqa: BLE001 - not JAX's failure: the caller decides
            on_error(e)

    # No timeout of libFuzzer's or atheris' own: the supervisor times a case
    # out. (-timeout=0 does not do that: atheris then kills any input past
    # one second, 'Timeout: 1s elapsed, timeout=0s', exit code 77.)
    argv = [sys.argv[0], *INPUT_LENGTH, f"-seed={seed % 2**31 or 1}", "-rss_limit_mb=0",
            f"-timeout={NO_TIMEOUT_S}", "-handle_segv=0", "-handle_abrt=0", "-handle_bus=0", "-handle_ill=0",
            "-handle_fpe=0", "-handle_int=0", "-handle_term=0", "-print_final_stats=0",
            f"-artifact_prefix={os.path.join(artifact_dir, '')}", corpus_dir]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()


def main():
    """Standalone: replay known failures, then let libFuzzer run the test;
    a failure not filed in the corpus stops it as a crash."""
    corpus_dir = os.environ.get("DISCHARGE_FUZZ_CORPUS", "corpus")
    database = os.environ.get("DISCHARGE_FUZZ_DATABASE", os.path.join(corpus_dir, "db"))
    filed = filed_signatures(
        corpus_dir, lambda m: print(f"atheris harness: skipped {m}", file=sys.stderr))

    def body(case):
        return check_property(
            case, Stats(), already_found=lambda f: findings.signature(f) in filed)
    db = open_database(database)

    def test(phases):
        return campaign_test(body, list(DEFAULT_STRATEGIES), database=db,
                             max_examples=1, phases=phases)
    instrument_discharge_modules()

    def still_fails(f):
        print(f"atheris harness: known failure, not filed yet: {f}", file=sys.stderr)
    replay_database(test(REPLAY), still_fails)
    replay_corpus(corpus_dir, body, on_failure=still_fails,
                  on_fixed=lambda e: print(f"atheris harness: fixed? {e.path}", file=sys.stderr),
                  on_warning=lambda m: print(f"atheris harness: skipped {m}", file=sys.stderr))
    atheris.Setup([sys.argv[0], *INPUT_LENGTH, *sys.argv[1:]],
                  test(tuple(Phase)).hypothesis.fuzz_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

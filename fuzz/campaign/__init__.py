"""The campaign: the Hypothesis property every test and worker runs
(`property`), crash-isolated workers and their supervisor, the atheris
harness, the example database, the ``run`` command and what it writes."""

# The program strategies a worker draws from, by name (`property` maps them;
# named here, where the CLI may import them without JAX).
STRATEGIES = ("valid", "invalid", "swarm", "refs", "plain", "copies")
# What a campaign draws unless told (docs/measurements.md, "Ten minutes":
# with refs, 53 of 74 live bugs in 10 minutes against 47 without; "Plain
# programs for half the ref draws (stop 58)": 51 of 58 root causes against
# 48 with plain left out; "Copy programs for a seventh of the draws (stop
# 60)": 50 of 58 against 46). A name twice is drawn twice as often: two
# sevenths valid, a seventh each refs, plain and copies, two sevenths invalid.
DEFAULT_STRATEGIES = ("valid", "valid", "refs", "plain", "copies", "invalid", "invalid")

# How a worker spends the costly paths and oracles (`schedule`): on every
# case, or by cost and what each has not yet run on.
SCHEDULES = ("all", "cost", "pairs")
DEFAULT_SCHEDULE = "cost"

# Where a new finding is shrunk, minimized and verified: on the worker that
# found it, at once ("inline"), or after the workers stop ("end": a worker
# files it unverified and fuzzes on; `Campaign._finish_filing` completes it
# on its own budget).
FILINGS = ("inline", "end")
DEFAULT_FILING = "inline"

# Whether a valid case a known crash stopped on some path runs again
# without the statements that triggered it (`known_findings.unmasked`), and
# one a path refused as unsupported without the statements the refusal is
# about (`unsupported.unmasked`): the bug behind a known one is met without
# waiting for a case without it. On:
# two 10-minute measurements exposed more bugs with it (docs/measurements.md).
DEFAULT_UNMASK = True

# Whether a valid case a path refused runs there as that path can
# (`fuzz.paths.projected`: the eager path without the semaphores,
# `pltpu.load`s and reshaped views it cannot run).
DEFAULT_PROJECT = True

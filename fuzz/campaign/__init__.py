"""The campaign: the Hypothesis property every test and worker runs
(`property`), crash-isolated workers and their supervisor, the atheris
harness, the example database, the ``run`` command and what it writes."""

# The program strategies a worker draws from, by name (`property` maps them;
# named here, where the CLI may import them without JAX).
STRATEGIES = ("valid", "invalid", "swarm", "refs")

# How a worker spends the costly paths and oracles (`schedule`): on every
# case, or by cost and what each has not yet run on.
SCHEDULES = ("all", "cost")

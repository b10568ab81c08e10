"""The campaign: the Hypothesis property every test and worker runs
(`property`), crash-isolated workers and their supervisor, the atheris
harness, the example database, the ``run`` command and what it writes."""

# The program strategies a worker draws from, by name (`property` maps them;
# named here, where the CLI may import them without JAX).
STRATEGIES = ("valid", "invalid", "swarm")

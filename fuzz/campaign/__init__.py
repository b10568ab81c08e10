"""The campaign: the Hypothesis property every test and worker runs
(`property`), crash-isolated workers and their supervisor, the atheris
harness, the example database, the ``run`` command and what it writes."""

"""The snippet a whole-program oracle's report opens with (vmap-stack,
grad-matches) is short, public and shows its bug alone: the program as a
plain function, the transformation next to what it should agree with, both
printed."""
import os
import re
import subprocess
import sys

import pytest

from fuzz.triage import filing
from hunting import known_failure

ENTRIES = [
    "checkpoint-vjp-drops-ref-writes",
    "custom-vmap-vjp-drops-ref-writes",
    "vmap-transformed-ref-indexed",
    "vmap-while-batched-count-ref-off-leading-axis-silent",
    "run-state-jvp-of-store-through-bitcast",
    "run-state-jvp-of-integer-addupdate",
    "run-state-reverse-mode-fails",
]


@pytest.mark.parametrize("known_id", ENTRIES)
def test_a_whole_program_oracles_snippet_is_short_and_shows_its_bug_alone(known_id, tmp_path):
    finding, _ = filing.record(known_failure(known_id), corpus_dir=tmp_path / "c",
                               reports_dir=tmp_path / "r", verify=True)
    repro = finding.reproducer
    assert repro["status"] == "reproduces" and repro["comparison"], repro
    md = (tmp_path / "r" / f"{finding.id}.md").read_text()
    text = md.split("```python\n")[1].split("```")[0]
    lines = text.splitlines()
    assert len(lines) <= 15 and lines[-1].startswith("# Bug: "), text
    assert "jax._src" not in "\n".join(lines[:-1]), text
    ran = subprocess.run([sys.executable, "-I", "-c", text], cwd=tmp_path, capture_output=True,
                         text=True, timeout=180,
                         env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)})
    if raised := re.search(r": raises (\w+): ", lines[-1]):   # the bug is what one side raises
        assert ran.returncode == 1 and f"{raised[1]}: " in ran.stderr, text + ran.stderr
        return
    assert ran.returncode == 0, text + ran.stderr
    shown = [line.split(": ", 1)[1] for line in ran.stdout.splitlines() if ": " in line]
    assert len(shown) == 2 and shown[0] != shown[1], text + ran.stdout

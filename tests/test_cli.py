"""The command line: bad input is one clear line and exit 2; a run prints a summary."""
import pytest

from fuzz import cli, compat, exits


@pytest.mark.parametrize("argv, message", [
    (["run", "--bogus"], "unrecognized arguments: --bogus"),
    (["run", "--max-examples", "0"], "must be >= 1"),
    (["run", "--max-examples", "many"], "is not an integer"),
    (["fly"], "invalid choice"),
])
def test_bad_flags_are_one_line_and_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == exits.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_bad_strategy_name(capsys):
    assert cli.main(["run", "--strategies", "valid,typo"]) == exits.EXIT_ERROR
    assert "--strategies" in capsys.readouterr().err


def test_unknown_jax_version_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(compat.jax, "__version__", "0.99.0")
    assert cli.main(["run", "--max-examples", "1"]) == exits.EXIT_ERROR
    err = capsys.readouterr().err.strip()
    assert "JAX 0.99.0 is not supported" in err and len(err.splitlines()) == 1


def test_run_prints_a_summary(capsys, tmp_path):
    code = cli.main(["run", "--max-examples", "10", "--workers", "1", "--quiet", "--no-verify",
                     "--no-minimize", "--corpus", str(tmp_path / "corpus"),
                     "--reports", str(tmp_path / "reports"), "--out", str(tmp_path / "out"),
                     "--database", str(tmp_path / "db")])
    out = capsys.readouterr().out
    assert code in (exits.EXIT_CLEAN, exits.EXIT_FOUND)
    assert "== campaign: " in out and "stopped by max_cases" in out
    assert "cases/s" in out and "pallas_call" in out
    assert (tmp_path / "out" / "summary.json").exists()

"""Hydra's flags as `python -m healthbench_exp` honours them: `--hydra-help` advertises no shell
completion (Hydra's completes only `python <script>.py`), and `-sc` says so in one line."""

from __future__ import annotations

from tests.e2e.test_e2e import run_cli


def test_hydra_help_does_not_advertise_shell_completion() -> None:
    result = run_cli("--hydra-help")
    assert result.returncode == 0, result.stderr
    assert "== Flags ==" in result.stdout and "--multirun,-m" in result.stdout
    assert "hydra/launcher: " in result.stdout  # the config groups, as Hydra lists them
    assert "-sc" not in result.stdout and "shell-completion" not in result.stdout


def test_shell_completion_is_refused_in_one_line() -> None:
    for arguments in (("-sc", "install=bash"), ("--shell-completion", "install=fish")):
        result = run_cli(*arguments)
        assert result.returncode == 2
        assert result.stderr.strip() == (
            "error: shell completion (-sc) is not available: Hydra completes only "
            "`python <script>.py`, not `python -m healthbench_exp`; --help lists the options "
            "and config groups"
        )
        assert "unknown config option" not in result.stderr

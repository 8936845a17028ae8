"""Hydra's flags as `python -m healthbench_exp` honours them: `--hydra-help` advertises no shell
completion (Hydra's completes only `python <script>.py`), and `-sc` says so in one line;
`--help` lists every exit code the program can return."""

from __future__ import annotations

import re
import signal

from healthbench_exp.core.run_end import Exit
from healthbench_exp.core.stop_signals import STOPPING_SIGNALS
from tests.e2e.test_e2e import run_cli


def test_help_lists_every_exit_code() -> None:
    result = run_cli("--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    listed = text[text.index("Exit codes:") : text.index("(docs/outputs.md)")]
    codes = {int(code) for code in re.findall(r"\b(\d{1,3}) [A-Za-z]", listed)}
    signals = {128 + s for s in STOPPING_SIGNALS}  # 130 SIGINT, 143 SIGTERM, 129 SIGHUP, ...
    assert codes == {int(code) for code in Exit if code != Exit.SIGNALLED} | signals, listed
    for s in STOPPING_SIGNALS:
        assert f"{128 + s} {'Ctrl-C' if s == signal.SIGINT else signal.Signals(s).name}" in listed


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

"""Hydra's own flags as `python -m healthbench_exp` can honour them.

Hydra's shell completion (`-sc install=bash`) completes only `python <file with @hydra.main>.py`
(its bash script greps the file named after `python` for `@hydra.main`), never `python -m
healthbench_exp`: `-sc` is refused in one line, and `--hydra-help` lists Hydra's flags without it
(conf/hydra/hydra_help/healthbench.yaml).
"""

from __future__ import annotations

from collections.abc import Sequence

from healthbench_exp.config.schema import ConfigError

SHELL_COMPLETION = ("-sc", "--shell-completion")
HYDRA_HELP = "hydra/hydra_help=healthbench"  # Hydra's help, without -sc


def hydra_flag_arguments(arguments: Sequence[str]) -> list[str]:
    """`arguments` for Hydra: with `--hydra-help`, the help that leaves out the shell completion;
    ConfigError for `-sc`/`--shell-completion`, which cannot work for `python -m`."""
    if any(arg in SHELL_COMPLETION or arg.startswith("--shell-completion=") for arg in arguments):
        raise ConfigError(
            "shell completion (-sc) is not available: Hydra completes only `python <script>.py`, "
            "not `python -m healthbench_exp`; --help lists the options and config groups"
        )
    if "--hydra-help" in arguments:
        return [*arguments, HYDRA_HELP]
    return list(arguments)

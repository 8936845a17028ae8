"""Hydra's composition errors, each as one line that says what to write instead (exit 2).

Hydra reports a mistake it finds while composing the config with its own several lines and exit
1: a comma list without `-m` ("Ambiguous value"), a key that must be added with `+` ("not in
struct"), a group option that does not exist, a YAML file it cannot read in a config directory of
the user's (`--config-dir`, `hydra.searchpath`). `composition_errors_raised` has Hydra raise
them instead of printing them (its `HYDRA_FULL_ERROR` switch, off again while a job runs, so a
job's own failure is reported as before), and `composition_error` turns each into a ConfigError
of one line, which the CLI prints as it prints the mistakes `check_overrides` finds before Hydra
starts: `error: <line>`, exit 2, nothing written. An interpolation that cannot be resolved (`${x}`
naming no key) is found when the job converts its config (`cli.compose.to_config`): the same
function words it, and the job ends as a refused start (exit 2, one line).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException, MissingConfigException
from omegaconf.errors import OmegaConfBaseException

from healthbench_exp.config.schema import ConfigError

FULL_ERROR = "HYDRA_FULL_ERROR"  # set: Hydra raises what it would print
# set beside FULL_ERROR by the harness: a process it starts (a launcher's worker, a SLURM job)
# inherits both, and knows the switch for the harness's, not the user's
SET_BY_HARNESS = "HEALTHBENCH_HYDRA_FULL_ERROR"
MULTIRUN_FLAGS = ("-m", "--multirun")


class _Switch:
    set_here = False  # whether `composition_errors_raised` set FULL_ERROR in this process


@contextmanager
def composition_errors_raised() -> Iterator[None]:
    """Around the Hydra app: Hydra raises its composition errors (for `composition_error`)
    instead of printing them; left as it is where the user set `HYDRA_FULL_ERROR`."""
    if os.environ.get(FULL_ERROR) is not None and os.environ.get(SET_BY_HARNESS) is None:
        yield
        return
    os.environ[FULL_ERROR] = os.environ[SET_BY_HARNESS] = "1"
    _Switch.set_here = True
    try:
        yield
    finally:
        os.environ.pop(FULL_ERROR, None)
        os.environ.pop(SET_BY_HARNESS, None)
        _Switch.set_here = False


@contextmanager
def job_errors_printed() -> Iterator[None]:
    """Around a job: what it raises is printed by Hydra as before (a traceback for a bug), not
    taken for a composition error; a job that returns gives the next job's composition back to
    `composition_errors_raised`."""
    if not _Switch.set_here:
        yield
        return
    os.environ.pop(FULL_ERROR, None)
    yield  # raised: FULL_ERROR stays off, Hydra prints the job's error its own way
    os.environ[FULL_ERROR] = "1"


def is_multirun(argv: Sequence[str]) -> bool:
    """Whether the command line asks for a sweep (`-m`, `--multirun`, `hydra.mode=MULTIRUN`)."""
    return any(a in MULTIRUN_FLAGS or a.lstrip("+") == "hydra.mode=MULTIRUN" for a in argv)


def sweep_command(argv: Sequence[str]) -> str:
    """The command line `argv` with `-m` added: the sweep it asks for. A sweep writes into
    `hydra.sweep.dir` (its jobs in numbered folders) and ignores `hydra.run.dir`: a directory
    given as the run's becomes the sweep's."""
    arguments = [
        f"hydra.sweep.dir={a.split('=', 1)[1]}" if a.lstrip("+").startswith(RUN_DIR) else a
        for a in argv
    ]
    return "python -m healthbench_exp -m " + shlex.join(arguments)


RUN_DIR = "hydra.run.dir="


def ambiguous(arg: str, key: str, argv: Sequence[str]) -> ConfigError:
    """A comma list given without `-m`: it sweeps only with `-m`; the command with it (and,
    for a key with a value of its own, how a value with a comma is written)."""
    value = f"; a value with a comma is quoted: '{key}=a,b'" if "." in key else ""
    return ConfigError(
        f"{arg}: a comma list sweeps (one run per value), and only with -m: "
        f"{sweep_command(argv)}{value}"
    )


def _arg_of(key: str, argv: Sequence[str]) -> str | None:
    """The override in `argv` that sets `key` (with or without `+`), as typed."""
    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        try:
            if parser.parse_override(arg).key_or_group == key:
                return arg
        except Exception:  # Hydra's grammar: reported on its own
            continue
    return None


def _first_line(text: object) -> str:
    return str(text).strip().splitlines()[0] if str(text).strip() else ""


def _directories(message: str) -> list[str]:
    """The config directories Hydra's message lists (`path=file://...` lines)."""
    return re.findall(r"path=file://(\S+)", message)


def _searched(message: str) -> str:
    paths = _directories(message)
    return f" (searched: {', '.join(paths)})" if paths else ""


def _choices(group: str, message: str) -> str:
    """ "; valid choices for <group>: ..." from the directories searched ("" when none)."""
    found = sorted({p.stem for d in _directories(message) for p in Path(d, group).glob("*.yaml")})
    return f"; valid choices for {group}: {', '.join(found)}" if found else ""


def _not_in_struct(key: str, arg: str | None) -> ConfigError:
    value = (arg or f"{key}=...").split("=", 1)[1]
    parent, _, name = key.rpartition(".")
    where = f"{parent} has no key {name!r} yet" if parent else f"there is no key {name!r} yet"
    return ConfigError(
        f"{arg or key}: {where}; a key the config does not have is added with '+': "
        f"write +{key}={value}"
    )


def _missing_config(exc: MissingConfigException, argv: Sequence[str]) -> ConfigError:
    """A group option, a defaults entry or the primary config that no directory holds."""
    message = str(exc)
    missing = exc.missing_cfg_file or ""
    group, _, option = missing.rpartition("/")
    if exc.options and group:  # an override chose an option the group does not have
        arg = _arg_of(group, argv) or f"{group}={option}"
        return ConfigError(
            f"{arg}: {group} has no option {option!r}. Valid choices for {group}: "
            f"{', '.join(exc.options)}"
        )
    entry = re.match(r"In '(.+?)': Could not (?:load|find) '(.+?)'", message)
    if entry:  # a defaults list (a preset of the user's) names a config that does not exist
        return ConfigError(
            f"{entry.group(1)}.yaml names {entry.group(2)!r} in its defaults list, which no "
            f"config directory holds{_searched(message)}{_choices(group, message)}"
        )
    return ConfigError(f"{_first_line(message)}{_searched(message)}")


def _yaml(exc: yaml.YAMLError) -> ConfigError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or _first_line(exc)
    if mark is None:
        return ConfigError(f"a config file is not valid YAML: {problem}")
    return ConfigError(
        f"{mark.name}, line {mark.line + 1}, column {mark.column + 1}: not valid YAML "
        f"({problem}); fix the file, or leave its directory out of --config-dir and "
        "hydra.searchpath"
    )


def omegaconf_error(exc: OmegaConfBaseException, argv: Sequence[str] = ()) -> ConfigError:
    """An OmegaConf error (an interpolation naming no key, a value of the wrong type), naming
    the key and, where one set it, the override."""
    key = str(getattr(exc, "full_key", "") or "")
    message = str(getattr(exc, "msg", "") or exc)
    line = _first_line(message)
    arg = _arg_of(key, argv) if key else None
    where = arg or key
    hint = ""
    if "nterpolation" in type(exc).__name__ or "Interpolation" in line:
        hint = (
            "; an interpolation names a key of the config (${sampling.max_tokens}) or a "
            "resolver (${oc.env:VAR})"
        )
    return ConfigError(f"{where}: {line}{hint}" if where else f"{line}{hint}")


def composition_error(exc: BaseException, argv: Sequence[str]) -> ConfigError | None:
    """`exc`, raised by Hydra while composing the config of `argv`, as one line saying what to
    write instead; None for anything else (a bug: its traceback is the report)."""
    if isinstance(exc, yaml.YAMLError):
        return _yaml(exc)
    if isinstance(exc, MissingConfigException):
        return _missing_config(exc, argv)
    if isinstance(exc, OmegaConfBaseException):
        return omegaconf_error(exc, argv)
    if not isinstance(exc, HydraException):
        return None
    message = str(exc)
    if isinstance(exc.__cause__, yaml.YAMLError):
        return _yaml(exc.__cause__)
    ambiguous_arg = re.match(r"(?:Ambiguous value for argument|Sweep parameters) '(.+?)'", message)
    if ambiguous_arg:
        arg = ambiguous_arg.group(1)
        key = arg.split("=", 1)[0].lstrip("+~")
        return ambiguous(arg, key, argv)
    override = re.match(r"Could not override '(.+?)'", message)
    cause = exc.__cause__
    if override and cause is not None and "not in struct" in str(cause):
        key = override.group(1)
        return _not_in_struct(key, _arg_of(key, argv))
    appended = re.match(r"Could not append to config\. An item is already at '(.+?)'", message)
    if appended:
        key = appended.group(1)
        arg = _arg_of(key, argv) or key
        return ConfigError(f"{arg}: {key} is already an option; set it without '+'")
    detail = f" ({_first_line(cause)})" if cause is not None else ""
    return ConfigError(f"{_first_line(message)}{detail}{_searched(message)}")

"""Command-line overrides checked before Hydra runs: every mistake is one line naming the key.

Hydra would report an unknown group option, a value of the wrong type or a comma list without
`-m` with its own several lines and exit 1, and would store a key added with `+` that the schema
does not have (a typo such as `+sampling.temprature=0` ran at the default temperature).
`check_overrides` refuses each of these as a ConfigError (the CLI prints it and exits 2), naming
the valid options, the valid choices of a group (the package's and those of the user's config
directories: `hydra.searchpath`, `--config-dir`), the type a key takes, or the command with `-m`.
What Hydra finds only while composing is worded by `cli.hydra_errors`, the same way.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ChoiceSweep, Override
from omegaconf import DictConfig, ListConfig, OmegaConf, ValueNode
from omegaconf.errors import OmegaConfBaseException
from omegaconf.nodes import BooleanNode, EnumNode, FloatNode, IntegerNode

from healthbench_exp.cli.compose import CONFIG_PATH
from healthbench_exp.cli.hydra_errors import ambiguous, is_multirun
from healthbench_exp.config.schema import Config, ConfigError, unknown_option
from hydra_plugins.healthbench_exp_conf.searchpath import working_directory_conf

# Hydra flags that take the next argument as their value.
_FLAGS_WITH_VALUE = {"--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd"}
GROUPS = {
    "task", "completions", "model", "judge", "difficulty", "sampling", "wandb", "experiment"
}  # fmt: skip
SET_BY_THE_HARNESS = {
    "budget.sweep_dir": "is set by a sweep (-m) for each of its jobs, not on the command line"
}


def check_overrides(argv: list[str]) -> None:
    """Raise ConfigError (one line) for the first override that Hydra would refuse with its own
    text, or accept wrongly: an unknown key (with `+` too; with a did-you-mean and the valid
    options), a group option that does not exist, a value of the wrong type, a comma list
    without `-m` (a sweep: the command with `-m`; a list key: the whole list in brackets)."""
    values_follow = False
    parser = OverridesParser.create()
    schema: list[DictConfig] = []  # the typed schema, made once when a key needs it
    extra = _search_dirs(parser, argv)  # the user's config directories: their presets count
    sweeps = is_multirun(argv)
    for arg in argv:
        if values_follow or arg.startswith("-"):
            values_follow = arg in _FLAGS_WITH_VALUE
            continue
        if "=" not in arg or arg.startswith("~"):
            continue
        try:
            override = parser.parse_override(arg)
        except Exception as exc:  # Hydra's grammar error: its first line names the problem
            raise ConfigError(f"cannot read {arg}: {str(exc).splitlines()[0]}") from None
        key = override.key_or_group
        if not sweeps and override.is_sweep_override():
            if _is_list_key(key):
                _check_list(key, override, arg, sweeps)
            raise ambiguous(arg, key, argv)
        if key.split(".")[0].split("/")[0] == "hydra":
            continue
        if key in GROUPS:
            _check_group(key, override, arg, extra)
            continue
        if key in SET_BY_THE_HARNESS:
            raise ConfigError(f"{arg}: {key} {SET_BY_THE_HARNESS[key]}; drop it")
        _check_known(key, override.is_add() or override.is_force_add())
        if override.is_add() and unknown_option(key) is None and _is_schema_key(key):
            raise ConfigError(
                f"{arg}: {key} is already an option; set it without '+' ({arg.lstrip('+')})"
            )
        if not schema:
            schema.append(OmegaConf.structured(Config))
        _check_type(schema[0], key, override, arg, sweeps)


def _check_known(key: str, added: bool) -> None:
    problem = unknown_option(key)
    if problem is None:
        return
    where, valid = problem
    if not where:
        valid = sorted({*valid, *GROUPS})
    failed_part = key.split(".")[where.count(".") + 1 if where else 0]
    guess = difflib.get_close_matches(failed_part, valid, n=1)
    hint = f" Did you mean '{guess[0]}'?" if guess else ""
    plus = " (added with '+': the schema has no such key)" if added else ""
    raise ConfigError(
        f"unknown config option '{key}'{plus}.{hint} Valid options under "
        f"{repr(where) if where else 'the top level'}: {', '.join(valid)}"
    )


def _is_schema_key(key: str) -> bool:
    """Whether `key` is a field of the schema itself (not a key inside a free-form field)."""
    parent, _, name = key.rpartition(".")
    schema = OmegaConf.structured(Config)
    node = OmegaConf.select(schema, parent) if parent else schema
    return isinstance(node, DictConfig) and not node._is_none() and name in node


def _values(override: Override) -> list[object] | None:
    """The values an override sets (each choice of a sweep); None for a range or interval."""
    if not override.is_sweep_override():
        return [override.value()]
    value = override.value()
    return list(value.list) if isinstance(value, ChoiceSweep) else None


def _is_list_key(key: str) -> bool:
    """Whether the schema types `key` as a list (`jury`)."""
    parent, _, name = key.rpartition(".")
    schema = OmegaConf.structured(Config)
    container = OmegaConf.select(schema, parent) if parent else schema
    if not isinstance(container, DictConfig) or container._is_none():
        return False
    return isinstance(container._get_node(name, throw_on_missing_key=False), ListConfig)


def _config_dirs(argv: list[str]) -> list[Path]:
    """The directories `--config-dir DIR` (`--config-dir=DIR`, `-cd DIR`) adds."""
    dirs = []
    for i, arg in enumerate(argv):
        if arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]))
        elif arg in ("--config-dir", "-cd") and i + 1 < len(argv):
            dirs.append(Path(argv[i + 1]))
    return dirs


def _search_dirs(parser: OverridesParser, argv: list[str]) -> list[Path]:
    """The local directories searched besides the package's presets: the working directory's
    `conf/`, and those `hydra.searchpath=[file://DIR, ...]` and `--config-dir` add (other schemes
    left out)."""
    local = working_directory_conf()
    dirs: list[Path] = [*_config_dirs(argv), *([local] if local else [])]
    for arg in argv:
        if not arg.lstrip("+").startswith("hydra.searchpath="):
            continue
        try:
            value = parser.parse_override(arg).value()
        except Exception:  # Hydra reports it
            continue
        entries = value if isinstance(value, list) else [value]
        dirs += [Path(str(e)[len("file://") :]) for e in entries if str(e).startswith("file://")]
    return dirs


def _check_group(group: str, override: Override, arg: str, extra: list[Path]) -> None:
    values = _values(override)
    folders = [Path(CONFIG_PATH), *extra]
    choices = sorted({p.stem for folder in folders for p in (folder / group).glob("*.yaml")})
    for value in values or []:
        if value is None and group == "experiment":
            continue
        if not isinstance(value, str) or value not in choices:
            guess = difflib.get_close_matches(str(value), choices, n=1)
            hint = f" Did you mean '{guess[0]}'?" if guess else ""
            raise ConfigError(
                f"{arg}: {group} has no option {value!r}.{hint} Valid choices for {group}: "
                f"{', '.join(choices)}"
            )


def _expected(node: ValueNode) -> str | None:
    """What a typed leaf accepts, in words; None for strings and free-form values."""
    if isinstance(node, FloatNode):
        kind = "a number"
    elif isinstance(node, IntegerNode):
        kind = "an integer"
    elif isinstance(node, BooleanNode):
        kind = "true or false"
    elif isinstance(node, EnumNode):
        kind = "one of " + ", ".join(member.name for member in node.enum_type)
    else:
        return None
    return f"{kind} or null" if node._is_optional() else kind


def _check_type(schema: DictConfig, key: str, override: Override, arg: str, sweeps: bool) -> None:
    parent, _, name = key.rpartition(".")
    container = OmegaConf.select(schema, parent) if parent else schema
    if not isinstance(container, DictConfig) or container._is_none():
        return
    node = container._get_node(name, throw_on_missing_key=False)
    if isinstance(node, ListConfig):
        _check_list(key, override, arg, sweeps)
        return
    if not isinstance(node, ValueNode):  # not a leaf of the schema
        return
    expected = _expected(node)
    if expected is None:
        return
    for value in _values(override) or []:
        if isinstance(value, str) and "${" in value:  # an interpolation: resolved later
            continue
        try:
            node.validate_and_convert(value)
        except (OmegaConfBaseException, ValueError):
            raise ConfigError(f"{arg}: {key} takes {expected}, not {value!r}") from None


def _check_list(key: str, override: Override, arg: str, sweeps: bool) -> None:
    """A key the schema types as a list given a single value or a comma list (`jury=gpt54`,
    `jury=gpt54,gpt41mini`: the brackets forgotten): Hydra would refuse it with its own lines
    and exit 1, or (`-m`) sweep over values that are not lists. The whole list is shown."""
    values = _values(override) or []
    if any(value is None for value in values):
        raise ConfigError(f"{arg}: {key} takes a list, not null; write {key}=[] for none")
    bare = [str(value) for value in values if not isinstance(value, list)]
    if not bare:
        return
    if not override.is_sweep_override():
        raise ConfigError(f"{arg}: {key} takes a list, not {bare[0]!r}; write {key}=[{bare[0]}]")
    whole = f"{key}=[{','.join(bare)}]"
    each = ",".join(f"[{value}]" for value in bare)
    raise ConfigError(
        f"{arg}: {key} takes a list; write {whole} for one list of all "
        f"{len(bare)}"
        + (f", or -m {key}={each} to sweep over one-item lists" if sweeps else "")
        + (" (a comma list without brackets sweeps, and only with -m)" if not sweeps else "")
    )

"""Composing `conf/` into the typed `Config`: Hydra's compose API, as the CLI composes it.

`to_config` is the one conversion from Hydra's DictConfig to the `Config` dataclasses (and the
resolved config as plain data); the CLI (`cli.app`) uses it on the config Hydra hands the job,
`load_config` (public as `healthbench_exp.load_config`) on a config composed from overrides.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict, read_write
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from healthbench_exp.cli.hydra_errors import omegaconf_error
from healthbench_exp.cli.hydra_schema import register_configs
from healthbench_exp.config.schema import Config, ConfigError
from healthbench_exp.model.retired import SET_ON_COMMAND_LINE

CONFIG_PATH = str(Path(__file__).resolve().parent.parent / "conf")  # healthbench_exp/conf
DRY_RUN = "dry_run"  # the config's node (`DryRunConfig`), and the switch users type


def translate_dry_run(overrides: Sequence[str]) -> list[str]:
    """`dry_run=<switch>` as users type it (and as it was a boolean: `true`, `True`, `1`,
    `yes`, `+dry_run=true`, ...) becomes `dry_run.enabled=<switch>`, the node's switch, which
    Hydra reads as the schema's bool (an invalid value is refused naming `dry_run.enabled`);
    every other override is kept as it is (`dry_run.pilot=N`, a whole node `dry_run={...}`).

    The one reading of "is this a dry run, and with a pilot?": the main command and the bridge
    kit (`cli.bridge_kit`) compose their overrides through this (`load_config`, the CLI's
    `main`) and ask the composed `config.dry_run` (`DryRunConfig.requested`, `.pilot`), so an
    experiment preset that sets `dry_run` counts too."""
    translated = []
    for arg in overrides:
        key, sep, value = arg.partition("=")
        scalar = value.strip() and not value.strip().startswith(("{", "null"))
        if sep and key.lstrip("+") == DRY_RUN and scalar:
            translated.append(f"{DRY_RUN}.enabled={value}")
        else:
            translated.append(arg)
    return translated


def jury_presets(names: Sequence[str], searchpath: Sequence[str]) -> list[DictConfig]:
    """Each judge preset of `names` (a jury, SPEC 7.1), composed from Hydra's search path: the
    package's `conf/judge/` and each `hydra.searchpath` entry (`searchpath`); an unknown name is
    a ConfigError listing the presets there. Call while Hydra is initialized (in the app, or
    inside `initialize_config_dir`)."""
    loader = GlobalHydra.instance().config_loader()
    extra = [f"hydra.searchpath=[{','.join(searchpath)}]"] if searchpath else []
    valid = loader.get_group_options("judge", config_name="config", overrides=extra)
    unknown = [name for name in names if name not in valid]
    if unknown:
        raise ConfigError(
            f"jury: no judge preset named {', '.join(unknown)}; the presets are "
            f"{', '.join(valid)} (conf/judge/, and judge/ of each hydra.searchpath directory)"
        )
    members = []
    for name in names:
        composed = loader.load_configuration(
            "config", overrides=[*extra, f"judge={name}"], run_mode=RunMode.RUN
        )
        members.append(composed.judge)
    return members


def with_jury(cfg: DictConfig, searchpath: Sequence[str] | None = None) -> DictConfig:
    """`cfg` with `jury_members` composed from `jury` (`jury_presets`; the search path: the
    running Hydra job's unless given)."""
    names = list(cfg.get("jury") or [])
    if searchpath is None:
        searchpath = list(HydraConfig.get().searchpath) if HydraConfig.initialized() else []
    members = jury_presets(names, searchpath) if names else []
    cfg = cfg.copy()
    with read_write(cfg), open_dict(cfg):
        cfg.jury_members = members
    return cfg


def typed_overrides() -> list[str]:
    """The running Hydra job's overrides as typed (interpolations not resolved); [] outside."""
    task = HydraConfig.get().overrides.task if HydraConfig.initialized() else []
    typed = OmegaConf.to_container(task, resolve=False) if task else []
    return [str(o) for o in typed or []]


def mark_set_shutdowns(cfg: DictConfig, overrides: Sequence[str]) -> DictConfig:
    """`cfg` with `<role>.shutdown_source` saying "set on the command line" where an override
    set `<role>.shutdown_date` (model, judge) and none set its source: the date is the user's,
    not the preset's, and is reported so (`model.retired`)."""
    keys = {arg.split("=", 1)[0].lstrip("+") for arg in overrides if "=" in arg}
    roles = [
        role
        for role in ("model", "judge")
        if f"{role}.shutdown_date" in keys and f"{role}.shutdown_source" not in keys
    ]
    if not roles:
        return cfg
    cfg = cfg.copy()
    with read_write(cfg), open_dict(cfg):
        for role in roles:
            cfg[role].shutdown_source = SET_ON_COMMAND_LINE
    return cfg


def to_config(
    cfg: DictConfig, overrides: Sequence[str] | None = None
) -> tuple[Config, dict[str, object]]:
    """The typed Config and the resolved config as plain data (for summary.json and W&B); a
    jury's presets are composed into `jury_members` (`with_jury`); a shutdown date set by
    `overrides` (default: the running job's) is marked as the user's (`mark_set_shutdowns`).
    A value that cannot be resolved (an interpolation naming no key) is a ConfigError naming
    the key."""
    typed = typed_overrides() if overrides is None else list(overrides)
    try:
        return _to_config(mark_set_shutdowns(cfg, typed))
    except OmegaConfBaseException as exc:
        raise omegaconf_error(exc, typed) from None


def _to_config(cfg: DictConfig) -> tuple[Config, dict[str, object]]:
    if len(cfg.get("jury") or []) == len(cfg.get("jury_members") or []):
        pass  # composed already (`load_config`), or no jury
    elif GlobalHydra.instance().is_initialized():
        cfg = with_jury(cfg)
    else:
        with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3"):
            cfg = with_jury(cfg)
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(f"set a value for {', '.join(missing)} (it has no default)")
    try:
        config = OmegaConf.to_object(cfg)
    except MissingMandatoryValue as exc:
        raise ConfigError(f"set a value for {exc.full_key} (it has no default)") from None
    assert isinstance(config, Config)
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(plain, dict)
    return config, {str(key): value for key, value in plain.items()}  # a config's keys: str


def load_config(overrides: Sequence[str] = ()) -> tuple[Config, dict[str, object]]:
    """`conf/` composed with command-line style `overrides` (`["experiment=demo",
    "sampling.num_examples=5"]`): the typed Config and the resolved config as plain data,
    exactly what `python -m healthbench_exp <overrides>` would run with. `hydra.*` overrides
    have no effect here (no Hydra job runs)."""
    register_configs()
    searchpath = [
        part.strip()
        for arg in overrides
        if arg.split("=", 1)[0] == "hydra.searchpath"
        for part in arg.split("=", 1)[1].strip("[]").split(",")
        if part.strip()
    ]
    with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3"):
        cfg = with_jury(
            compose(config_name="config", overrides=translate_dry_run(overrides)), searchpath
        )
    return to_config(cfg, overrides)

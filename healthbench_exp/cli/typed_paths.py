"""Paths in the config as the user typed them: relative to the directory the command was typed
in, also where `hydra.job.chdir=true` makes Hydra run the job inside its run directory."""

from __future__ import annotations

from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.utils import to_absolute_path
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

# the config's keys that name a file or folder the user gives
PATH_KEYS = ("dataset.path", "dataset.cache_dir", "completions.path", "cache.dir")


def from_where_typed(cfg: DictConfig) -> DictConfig:
    """`cfg` with each relative path of PATH_KEYS made absolute against the directory the
    command was typed in (Hydra's original working directory), where the running job was moved
    into its run directory (`hydra.job.chdir=true`); `cfg` itself otherwise (a relative path
    then already reads from that directory). `~` paths are absolute to the user."""
    if not HydraConfig.initialized() or not HydraConfig.get().job.chdir:
        return cfg
    cfg = cfg.copy()
    with read_write(cfg), open_dict(cfg):
        for key in PATH_KEYS:
            value = OmegaConf.select(cfg, key, default=None)
            typed = isinstance(value, str) and value and not value.startswith("~")
            if typed and not Path(value).is_absolute():
                OmegaConf.update(cfg, key, to_absolute_path(value))
    return cfg

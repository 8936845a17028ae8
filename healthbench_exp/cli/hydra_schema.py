"""The config schema as Hydra sees it: `base_config` in the ConfigStore and the `${run_suffix:}`
resolver. The CLI calls `register_configs()` before composing; nothing below the CLI touches
Hydra or OmegaConf (the schema itself is plain dataclasses, `config.schema`)."""

from __future__ import annotations

import secrets
import string

from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from healthbench_exp.config.schema import Config


def run_suffix() -> str:
    """This process's random 4-character suffix (a-z, 0-9: 1.7 million values) for the default
    run and sweep directories, so that runs started in the same second never share one."""
    global _run_suffix
    if _run_suffix is None:
        alphabet = string.ascii_lowercase + string.digits
        _run_suffix = "".join(secrets.choice(alphabet) for _ in range(4))
    return _run_suffix


_run_suffix: str | None = None


def register_configs() -> None:
    """Register the schema so `conf/config.yaml` can name it as `base_config`, and the
    `${run_suffix:}` resolver its default directories use."""
    ConfigStore.instance().store(name="base_config", node=Config)
    OmegaConf.register_new_resolver("run_suffix", run_suffix, use_cache=True, replace=True)

"""The config schema as Hydra sees it: `base_config` in the ConfigStore and the `${run_suffix:}`
resolver. The CLI calls `register_configs()` before composing; nothing below the CLI touches
Hydra or OmegaConf (the schema itself is plain dataclasses, `config.schema`)."""

from __future__ import annotations

import secrets
import string
from importlib.util import find_spec
from pathlib import Path

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
    expose_launcher_plugin()


def expose_launcher_plugin() -> None:
    """Let Hydra's plugin scanner find `hydra_plugins.healthbench_exp_launcher` (the
    `healthbench_slurm` launcher) and its sibling `hydra_plugins.healthbench_exp_conf` (the
    working directory's `conf/`) in an editable install too: there the packages sit behind an
    import hook that `pkgutil` cannot list, so their folder is added to the namespace's path."""
    try:
        spec = find_spec("hydra_plugins.healthbench_exp_launcher")
    except ImportError:  # no hydra_plugins namespace at all
        return
    if spec is None or not spec.submodule_search_locations:
        return
    import hydra_plugins

    folder = str(Path(next(iter(spec.submodule_search_locations))).parent)
    if folder not in list(hydra_plugins.__path__):
        hydra_plugins.__path__.append(folder)

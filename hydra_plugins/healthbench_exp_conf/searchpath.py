"""The working directory's `conf/` on healthbench-exp's config search path.

Hydra calls `manipulate_search_path` for every app it starts (and every `compose`); this plugin
acts only where the search path holds healthbench-exp's own presets (`healthbench_exp/conf`).
There it appends `<working directory>/conf` when that folder exists, right after the package's
presets: a name found in both is the package's (a published preset means the same thing in every
folder), and each such shadowed file is named once on standard error. The path is made absolute
when composed, so a run's `.hydra/hydra.yaml` (`hydra.runtime.config_sources`) records where its
presets came from, and `resume=` finds them from any folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.plugins.search_path_plugin import SearchPathPlugin

PROVIDER = "healthbench-exp working directory"  # the provider name in `--info searchpath`
LOCAL_CONF = "conf"  # the folder, relative to the working directory

_named: set[Path] = set()  # shadowed files already named on standard error, once per process


def package_conf(search_path: ConfigSearchPath) -> Path | None:
    """The folder of healthbench-exp's packaged presets if `search_path` holds it (as its `main`
    entry: `python -m healthbench_exp`, or the `compose` API pointed at it), else None."""
    for element in search_path.get_path():
        path = element.path.removeprefix("file://")
        if Path(path).name == "conf" and Path(path).parent.name == "healthbench_exp":
            return Path(path)
    return None


def working_directory_conf() -> Path | None:
    """`<working directory>/conf`, absolute, if that folder exists."""
    local = Path.cwd().resolve() / LOCAL_CONF
    return local if local.is_dir() else None


def shadowed(local: Path, packaged: Path) -> list[Path]:
    """The YAML files of `local` whose group and name the packaged presets hold too (the
    package's win): `local/model/gpt41.yaml` when `packaged/model/gpt41.yaml` exists."""
    return sorted(p for p in local.rglob("*.yaml") if (packaged / p.relative_to(local)).is_file())


class WorkingDirectoryConf(SearchPathPlugin):
    """Appends `<cwd>/conf` after healthbench-exp's presets (where they are searched)."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        packaged = package_conf(search_path)
        local = working_directory_conf()
        if packaged is None or local is None or local == packaged.resolve():
            return
        if any(e.path == f"file://{local}" for e in search_path.get_path()):
            return
        search_path.append(PROVIDER, f"file://{local}", anchor=SearchPathQuery(provider="main"))
        for path in shadowed(local, packaged):
            if path not in _named:
                _named.add(path)
                preset = path.relative_to(local)
                name = f"{preset.parent.as_posix()}={preset.stem}"
                if preset.parent == Path():  # conf/config.yaml: not a group's option
                    name = f"{preset.name} (the primary config)"
                print(
                    f"warning: {path} is not used: {name} is the packaged one "
                    f"({packaged / preset}), which wins; give yours another name",
                    file=sys.stderr,
                )

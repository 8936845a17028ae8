"""Hydra composes `conf/` once per run (`cli.compose.compose_once`): its first composition, made
only to read `hydra.mode`, is skipped where nothing can set that, and kept where something can."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hydra._internal.hydra import Hydra
from hydra._internal.utils import create_automatic_config_search_path
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode

from healthbench_exp.cli.compose import CONFIG_PATH, compose_once, mode_settable
from healthbench_exp.cli.hydra_schema import register_configs
from tests.e2e.test_e2e import run_cli


@pytest.fixture
def main_hydra() -> Iterator[Callable[..., Hydra]]:
    """Hydra as `hydra.main` creates it for the CLI (its config directory: the package's unless
    given); cleared after the test."""

    def create(config_dir: str = CONFIG_PATH) -> Hydra:
        register_configs()
        search_path = create_automatic_config_search_path(None, None, config_dir)
        return Hydra.create_main_hydra2(task_name="healthbench", config_search_path=search_path)

    yield create
    GlobalHydra.instance().clear()


def package_options(group: str) -> list[str]:
    return sorted(p.stem for p in (Path(CONFIG_PATH) / group).glob("*.yaml"))


def test_no_config_of_the_package_sets_hydra_mode(main_hydra: Callable[..., Hydra]) -> None:
    """What `compose_once` relies on: `hydra.mode` is unset in the package's config, with each
    experiment and each launcher of the package (the only presets packaged at the top level or
    in `hydra`; the other groups' presets are packaged in their own node)."""
    hydra = main_hydra()
    for overrides in (
        [],
        *([f"experiment={name}"] for name in package_options("experiment")),
        *([f"hydra/launcher={name}"] for name in package_options("hydra/launcher")),
    ):
        composed = hydra.compose_config(  # raises where it fails (Hydra's probe would say None)
            "config", overrides, run_mode=RunMode.MULTIRUN, validate_sweep_overrides=False
        )
        assert composed.hydra.mode is None, overrides


@pytest.mark.parametrize(
    ("argv", "settable"),
    [
        (["experiment=demo", "hydra.run.dir=/tmp/x", "sampling.seed=1,2"], False),
        (["-m", "hydra/launcher=parallel", "hydra.sweep.dir=/s", "hydra.job.chdir=false"], False),
        (["hydra.mode=MULTIRUN"], True),
        (["+hydra.mode=RUN"], True),
        (["hydra={mode:MULTIRUN}"], True),
        (["experiment=mine", "hydra.searchpath=[file:///tmp/conf]"], True),
        (["--config-dir", "/tmp/conf"], True),
        (["-cd", "/tmp/conf"], True),
        (["--config-name=other"], True),
    ],
)  # fmt: skip
def test_what_can_set_the_mode(argv: list[str], settable: bool) -> None:
    assert mode_settable(argv) is settable


def test_the_probe_is_answered_without_composing_and_restored(
    main_hydra: Callable[..., Hydra], tmp_path: Path
) -> None:
    # a config directory whose primary config sets the mode: only a real composition sees it
    (tmp_path / "config.yaml").write_text("hydra:\n  mode: MULTIRUN\n", encoding="utf-8")
    hydra = main_hydra(str(tmp_path))
    with compose_once(["experiment=demo"]):
        assert hydra.get_mode("config", []) is None
    assert hydra.get_mode("config", []) == RunMode.MULTIRUN
    with compose_once(["hydra.searchpath=[file:///elsewhere]"]):  # settable: Hydra asks
        assert hydra.get_mode("config", []) == RunMode.MULTIRUN


def test_a_mode_set_in_a_users_experiment_still_sweeps(
    tmp_path: Path,
) -> None:
    experiments = tmp_path / "conf" / "experiment"
    experiments.mkdir(parents=True)
    (experiments / "swept.yaml").write_text(
        "# @package _global_\ndefaults:\n  - demo\nhydra:\n  mode: MULTIRUN\n", encoding="utf-8"
    )
    sweep_dir, run_dir = tmp_path / "sweep", tmp_path / "run"
    result = run_cli(
        "experiment=swept", f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "dry_run=true",
        f"hydra.sweep.dir={sweep_dir}", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (sweep_dir / "0" / "estimate.json").is_file(), result.stdout
    assert (sweep_dir / "sweep_summary.json").is_file()
    assert not run_dir.exists()

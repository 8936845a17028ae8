"""A `conf/` in the working directory is searched beside the packaged presets, with no flag
(hydra_plugins/healthbench_exp_conf): its `conf/model/x.yaml` is `model=x` in a real run, `--help`
lists it, a name the package has too is the package's (said on standard error), and the
repository's own examples compose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from healthbench_exp import load_config
from hydra_plugins.healthbench_exp_conf.searchpath import PROVIDER
from tests.e2e.test_e2e import REPO, run_cli

OFFLINE_MODEL = REPO / "healthbench_exp" / "conf" / "model" / "offline.yaml"


def preset(folder: Path, group: str, name: str, model_name: str) -> Path:
    """`folder/conf/<group>/<name>.yaml`: the packaged offline model under another model name."""
    data = yaml.safe_load(OFFLINE_MODEL.read_text())
    data["name"] = model_name
    path = folder / "conf" / group / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_model_preset_of_the_working_directory_runs_without_a_flag(tmp_path: Path) -> None:
    preset(tmp_path, "model", "x", "x-of-the-working-directory")
    run_dir = tmp_path / "run"
    result = run_cli("experiment=demo", "model=x", f"hydra.run.dir={run_dir}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["config"]["model"]["name"] == "x-of-the-working-directory"
    assert "warning:" not in result.stderr
    hydra_yaml = yaml.safe_load((run_dir / ".hydra" / "hydra.yaml").read_text())
    local = {"path": str((tmp_path / "conf").resolve()), "schema": "file", "provider": PROVIDER}
    assert local in hydra_yaml["hydra"]["runtime"]["config_sources"]  # where its presets were

    listed = run_cli("--help", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    models = next(line for line in listed.stdout.splitlines() if line.startswith("model: "))
    assert "x" in models.removeprefix("model: ").split(", ") and "gpt41mini" in models


def test_without_the_folder_the_name_is_unknown(tmp_path: Path) -> None:
    result = run_cli("experiment=demo", "model=x", "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: model=x: model has no option 'x'.")


def test_a_name_in_both_places_is_the_packages(tmp_path: Path) -> None:
    shadow = preset(tmp_path, "model", "offline", "not-the-packaged-offline")
    result = run_cli("experiment=demo", "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["model"]["name"] == "offline-model"
    assert f"warning: {shadow.resolve()} is not used: model=offline is the packaged one (" in (
        result.stderr
    )
    assert result.stderr.count("warning:") == 1
    (tmp_path / "conf" / "config.yaml").write_text("defaults: []\n")  # another app's
    result = run_cli("experiment=demo", "--cfg", "job", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout)["model"]["name"] == "offline-model"
    assert (
        f"warning: {(tmp_path / 'conf' / 'config.yaml').resolve()} is not used: config.yaml (the "
        "primary config) is the packaged one (" in result.stderr
    )


@pytest.mark.parametrize(
    ("override", "key", "value"),
    [
        ("model=my_model", ("model", "name"), "llama3.2"),
        ("judge=my_judge", ("judge", "name"), "qwen2.5:14b"),
        ("sampling=my_sampling", ("sampling", "num_examples"), 20),
        ("experiment=my_study", ("sampling", "rollouts_per_example"), 2),
    ],
)
def test_the_repositorys_examples_compose(
    override: str, key: tuple[str, str], value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    _, resolved = load_config([override])
    section = resolved[key[0]]
    assert isinstance(section, dict) and section[key[1]] == value

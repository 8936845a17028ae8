"""An offline W&B run's results artifact is staged inside the run folder: W&B copies the files it
holds into `$WANDB_DATA_DIR/artifacts/staging` (by default `~/.local/share/wandb`) and the offline
run refers to them there by absolute path until `wandb sync`; the harness points it at
`<run dir>/wandb`, so the run folder holds everything its upload needs."""

from __future__ import annotations

from pathlib import Path

from healthbench_exp.output.wandb import content as wandb_content
from tests.e2e.test_e2e import run_cli
from tests.wandb_log import read_run


def test_an_offline_runs_artifact_is_staged_in_the_run_folder(tmp_path, monkeypatch) -> None:
    for name in ("WANDB_DIR", "WANDB_DATA_DIR", "WANDB_CACHE_DIR", "WANDB_MODE", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "home"  # W&B's default staging folder is under it
    home.mkdir()
    run_dir = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "sampling.num_examples=2", "wandb=offline",
        f"hydra.run.dir={run_dir}",
        env={"HOME": str(home), "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (offline_run,) = (run_dir / "wandb").glob("offline-run-*")
    run = read_run(offline_run)
    (artifact,) = [a for a in run.artifacts if a.type == wandb_content.ARTIFACT_TYPE]
    staged = [Path(entry.local_path) for entry in artifact.manifest.contents if entry.local_path]
    assert staged, artifact.manifest
    for path in staged:  # what `wandb sync` will read: in the run folder, and there
        assert path.is_relative_to(run_dir), path
        assert path.is_file(), path
    assert not (home / ".local" / "share" / "wandb").exists()

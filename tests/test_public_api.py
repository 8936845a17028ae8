"""The public API (`healthbench_exp.run` and friends) runs the same job as the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import healthbench_exp
from healthbench_exp import Config, load_config, load_examples, load_meta_rows, run
from tests import zygote

DEMO = ["experiment=demo", "wandb=disabled"]
# what differs between two runs of the same job: times, when the invocation ran, and how many
# requests happened to be in flight at once
VOLATILE = {"evaluation_s", "wall_time_s", "started_at", "finished_at", "peak_requests_in_flight"}


def comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def sorted_lines(path: Path) -> list[str]:
    """A JSONL file's rows, in a fixed order (rows finish in any order)."""
    return sorted(path.read_text(encoding="utf-8").splitlines())


def test_run_gives_the_clis_summary_and_files(tmp_path: Path) -> None:
    cli_dir, api_dir = tmp_path / "cli", tmp_path / "api"
    cli = zygote.run(
        *DEMO, f"hydra.run.dir={cli_dir}",
        env={**os.environ, "HEALTHBENCH_CACHE_DIR": str(tmp_path / "cli-cache")},  # not ours
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr

    config, plain = load_config(DEMO)
    assert isinstance(config, Config)
    summary = run(config, api_dir, plain)

    written = json.loads((api_dir / "summary.json").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(summary)) == written  # what it returns is what it wrote
    from_cli = json.loads((cli_dir / "summary.json").read_text(encoding="utf-8"))
    assert comparable(written) == comparable(from_cli)
    assert written["metrics"]["overall_score"] == pytest.approx(0.2879485581, abs=1e-9)
    for name in ("examples.jsonl", "per_criterion.jsonl"):
        assert sorted_lines(api_dir / name) == sorted_lines(cli_dir / name)
    job_files = {".hydra", "healthbench.log", "status.json"}  # the CLI's job bookkeeping
    assert {p.name for p in api_dir.iterdir()} == {p.name for p in cli_dir.iterdir()} - job_files


def test_run_without_a_plain_config_records_the_same_config(tmp_path: Path) -> None:
    config, plain = load_config([*DEMO, "sampling.num_examples=3"])
    summary = run(config, tmp_path)
    assert summary["config"] == plain
    assert summary["counts"]["examples"] == 3


def test_loaders_read_the_bundled_samples() -> None:
    config, _ = load_config(DEMO)
    assert len(load_examples(config.dataset)) == 24
    config, _ = load_config([*DEMO, "task=meta_eval"])
    assert len(load_meta_rows(config.dataset, config.task)) == 40


def test_importing_the_package_loads_none_of_the_engine() -> None:
    heavy = ["openai", "aiohttp", "hydra", "datasets", "healthbench_exp.engine.run"]
    probe = (
        "import sys, healthbench_exp; "
        f"print([m for m in {heavy!r} if m in sys.modules]); print(healthbench_exp.__version__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == healthbench_exp.__version__
    assert set(healthbench_exp.__all__) <= set(dir(healthbench_exp))
    with pytest.raises(AttributeError):
        _ = healthbench_exp.runner  # type: ignore[attr-defined]

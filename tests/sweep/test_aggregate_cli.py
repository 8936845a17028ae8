"""`python -m healthbench_exp.aggregate` end to end, as a user runs it: runs are read-only to it,
any mix of sweep and run directories, `--out`, nothing to aggregate, `--help`."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli, run_module


def aggregate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return run_module("healthbench_exp.aggregate", *args, cwd=cwd)


def tree_hashes(directory: Path) -> dict[str, str]:
    """Every file below `directory` -> the sha256 of its bytes."""
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A finished single run and a finished 2-job sweep on the same 4 prompts."""
    base = tmp_path_factory.mktemp("runs")
    env = {"HEALTHBENCH_CACHE_DIR": str(base / "cache")}  # module scope: set it here
    common = ("experiment=demo", "wandb=disabled", "sampling.num_examples=4")
    run = run_cli(*common, "model.name=offline-c", f"hydra.run.dir={base / 'run'}", env=env)
    assert run.returncode == 0, run.stderr
    sweep = run_cli(
        "-m", *common, "model.name=offline-a,offline-b", f"hydra.sweep.dir={base / 'sweep'}",
        env=env,
    )  # fmt: skip
    assert sweep.returncode == 0, sweep.stderr
    return {"run": base / "run", "sweep": base / "sweep"}


def test_a_run_directory_is_only_read(runs: dict[str, Path], tmp_path: Path) -> None:
    before = tree_hashes(runs["run"])
    assert "report.html" in before and "summary.json" in before
    result = aggregate(str(runs["run"]), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert tree_hashes(runs["run"]) == before  # not a byte changed, nothing added
    written = re.search(r"written: (\S+)/sweep_summary", result.stdout)
    assert written, result.stdout
    out = tmp_path / written.group(1)
    assert out.parent.parent == tmp_path / "aggregates"  # a new folder, named on screen
    data = json.loads((out / "sweep_summary.json").read_text())
    assert [r["status"] for r in data["jobs"]] == ["completed"]
    assert data["jobs"][0]["model"] == "offline-c"
    assert (out / "report.html").exists() and (out / "sweep_summary.md").exists()
    again = aggregate(str(runs["run"]), cwd=tmp_path)  # a second comparison: a second folder
    assert re.search(r"written: (\S+)/sweep_summary", again.stdout).group(1) != written.group(1)


def test_sweeps_and_runs_compared_into_out(runs: dict[str, Path], tmp_path: Path) -> None:
    before = {name: tree_hashes(path) for name, path in runs.items()}
    out = tmp_path / "comparison"
    result = aggregate(str(runs["sweep"]), str(runs["run"]), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert {name: tree_hashes(path) for name, path in runs.items()} == before
    data = json.loads((out / "sweep_summary.json").read_text())
    rows = {r["job"]: r for r in data["jobs"]}
    assert list(rows) == ["sweep/0", "sweep/1", "run"]
    assert {r["model"] for r in rows.values()} == {"offline-a", "offline-b", "offline-c"}
    labels = [r["label"] for r in rows.values()]  # what sets each run apart
    assert labels == ["model=offline-a", "model=offline-b", "model=offline-c"]
    # every pair over the same 4 prompts gets a paired difference, across sweep and run
    assert {(p["a"], p["b"]) for p in data["pairs"]} == {
        ("sweep/0", "sweep/1"), ("sweep/0", "run"), ("sweep/1", "run"),
    }  # fmt: skip
    html = (out / "report.html").read_text()
    links = re.findall(r"href='([^']+)'", html)
    assert len(links) == 9 and all((out / link).is_file() for link in links)
    assert "| run | `model=offline-c` | completed | DEMO | offline-c |" in result.stdout


def test_out_inside_a_run_directory_is_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    before = tree_hashes(runs["sweep"])
    for out in (runs["sweep"] / "0", runs["sweep"] / "0" / "cmp"):
        result = aggregate(str(runs["sweep"]), "--out", str(out), cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.strip().count("\n") == 0
        assert "is inside the run directory" in result.stderr
    assert tree_hashes(runs["sweep"]) == before


def test_nothing_to_aggregate_is_one_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    for target in ("empty", "missing"):
        result = aggregate(target, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
        assert "Traceback" not in result.stderr
    assert not (tmp_path / "aggregates").exists()
    assert not any((tmp_path / "empty").iterdir())  # nothing written where nothing was found


def test_help_explains_the_arguments_with_examples(tmp_path: Path) -> None:
    result = aggregate("--help", cwd=tmp_path)
    assert result.returncode == 0
    assert "DIR [DIR ...]" in result.stdout and "--out OUT" in result.stdout
    assert "examples:" in result.stdout
    assert "python -m healthbench_exp.aggregate multirun/2026-11-22/10-00-00" in result.stdout
    assert "never written" in result.stdout

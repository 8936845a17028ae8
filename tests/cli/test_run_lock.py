"""One writer per run directory: a second run refuses, default directories never collide, a lock
left by a dead process is taken over. Each test runs `python -m healthbench_exp` as a user does."""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests import zygote
from tests.e2e.test_e2e import REPO, run_cli


def start_run(*args: str, cwd: Path = REPO) -> zygote.ForkedRun | subprocess.Popen:
    """`python -m healthbench_exp <args>` started in its own process (see tests/zygote.py)."""
    return zygote.spawn(*args, env=os.environ.copy(), cwd=cwd)


def wait_for(
    condition, process: zygote.ForkedRun | subprocess.Popen, timeout_s: float = 240.0
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def file_hashes(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_second_run_into_a_busy_directory_refuses_at_once_and_harms_nothing(tmp_path) -> None:
    run_dir = tmp_path / "run"
    first = start_run(
        "experiment=demo", "wandb.mode=disabled", "runner.progress=false",
        "runner.max_concurrent=1", "offline_server.latency_ms=500", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    wait_for(lambda: len(lines(run_dir / "examples.jsonl")) >= 2, first)
    hydra_files = file_hashes(run_dir / ".hydra")
    second = run_cli(
        "experiment=demo", "wandb.mode=disabled", "sampling.seed=7", f"hydra.run.dir={run_dir}"
    )
    assert first.poll() is None  # refused at once, while the first one still runs
    assert second.returncode == 2
    message = second.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith(f"error: {run_dir} is in use by another run (pid {first.pid} on ")
    assert f"kill {first.pid}" in message and "choose another hydra.run.dir" in message
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    # the second process wrote nothing into the first one's directory
    assert file_hashes(run_dir / ".hydra") == hydra_files
    assert "sampling.seed=7" not in (run_dir / ".hydra" / "overrides.yaml").read_text()
    rows = [json.loads(line) for line in lines(run_dir / "examples.jsonl")]
    assert len(rows) == 24 and len({r["prompt_id"] for r in rows}) == 24
    for line in lines(run_dir / "per_criterion.jsonl"):
        json.loads(line)
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    assert not (run_dir / ".lock").exists()  # released when the run ended


def test_default_directories_of_runs_started_together_never_collide(tmp_path) -> None:
    args = ("experiment=demo", "wandb.mode=disabled", "runner.progress=false")
    runs = [start_run(*args, cwd=tmp_path) for _ in range(2)]
    for run in runs:
        _out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
    run_dirs = sorted(p.parent for p in (tmp_path / "outputs").glob("*/*/summary.json"))
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        assert re.fullmatch(r"\d\d-\d\d-\d\d-[a-z0-9]{4}", run_dir.name), run_dir.name
        assert len(lines(run_dir / "examples.jsonl")) == 24
        assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = {"pid": gone.pid, "host": socket.gethostname(), "started": time.time(), "command": "x"}
    (run_dir / ".lock").write_text(json.dumps(holder))
    result = run_cli("experiment=demo", "wandb.mode=disabled", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    assert f"was locked by pid {gone.pid} on " in result.stderr
    assert "no longer running; taking the lock over" in result.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    assert len(lines(run_dir / "examples.jsonl")) == 24
    assert not (run_dir / ".lock").exists()


def test_a_sweep_locks_its_directory(tmp_path) -> None:
    sweep_dir = tmp_path / "sweep"
    first = start_run(
        "-m", "experiment=demo", "wandb.mode=disabled", "runner.progress=false",
        "runner.max_concurrent=1", "offline_server.latency_ms=400", "sampling.seed=1,2",
        f"hydra.sweep.dir={sweep_dir}",
    )  # fmt: skip
    wait_for(lambda: len(lines(sweep_dir / "0" / "examples.jsonl")) >= 2, first)
    second = run_cli("-m", "experiment=demo", "sampling.seed=3", f"hydra.sweep.dir={sweep_dir}")
    assert second.returncode == 2
    assert f"{sweep_dir} is in use by another run (pid {first.pid} on " in second.stderr
    _out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert sorted(p.name for p in sweep_dir.iterdir() if p.is_dir()) == ["0", "1"]
    assert not list(sweep_dir.rglob(".lock"))

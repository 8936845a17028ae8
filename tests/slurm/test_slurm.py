"""Sweeps through a real SLURM (`hydra/launcher=slurm`: the healthbench_slurm launcher).

Needs a SLURM cluster this machine submits to (`.ci/slurm-up.sh` starts a single-node one:
slurm-wlm, munge, slurmdbd, MariaDB) and the `launchers` extra. Elsewhere the tests skip, naming
why; with HEALTHBENCH_REQUIRE_SLURM=1 (as `.ci/run` sets) they fail instead. The jobs are light:
the bundled sample, 3 examples, the built-in offline judge, `tests/bin/vllm` standing in for
vLLM (see tests/engine/test_serve.py), one CPU and 1 GB each, so two run at once on a 2-CPU node.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_e2e import REPO
from tests.engine.test_serve import (
    alive,
    assert_gone,
    listening,
    resume_to_completion,
    server_lives,
    stand_in_env,
)

# needs a SLURM cluster (`.ci/slurm-up.sh`): `pytest -m slow`. The cluster is one node: these
# tests run one after another on one xdist worker (the group is named as conftest names a
# module's group), so that no other test's jobs hold the node
# while one checks that its two jobs ran at once there
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("tests/slurm/test_slurm.py")]

LIGHT = ("experiment=demo", "wandb=disabled", "runner.progress=false", "sampling.num_examples=3")
ON_SLURM = (
    "hydra/launcher=slurm",
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.mem_gb=1",
    "hydra.launcher.timeout_min=10",
    "hydra.launcher.poll_s=1",
)
SWEEP_TIMEOUT_S = 240


@cache
def slurm_unavailable() -> str | None:
    """Why these tests cannot run here, or None."""
    if shutil.which("sbatch") is None:
        return "no SLURM here (sbatch not on PATH); .ci/slurm-up.sh starts a single-node cluster"
    try:
        import hydra_plugins.hydra_submitit_launcher  # noqa: F401
        import submitit  # noqa: F401
    except ImportError:
        return "the `launchers` extra (hydra-submitit-launcher) is not installed"
    sinfo = subprocess.run(
        ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30, check=False
    )
    if sinfo.returncode != 0:
        return f"SLURM does not answer: sinfo: {sinfo.stderr.strip()}"
    if not {"idle", "mixed", "allocated"} & set(sinfo.stdout.split()):
        return f"no SLURM node is up (sinfo: {' '.join(sinfo.stdout.split())})"
    return None


@pytest.fixture(autouse=True)
def slurm() -> None:
    reason = slurm_unavailable()
    if reason is None:
        return
    if os.environ.get("HEALTHBENCH_REQUIRE_SLURM") == "1":
        pytest.fail(f"HEALTHBENCH_REQUIRE_SLURM=1 but {reason}")
    pytest.skip(f"SLURM tests skipped: {reason}")


def sweep_command(sweep_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "healthbench_exp", "-m", *LIGHT, *args,
            f"hydra.sweep.dir={sweep_dir}"]  # fmt: skip


def run_sweep(
    sweep_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        sweep_command(sweep_dir, *args), capture_output=True, text=True,
        timeout=SWEEP_TIMEOUT_S, cwd=REPO, env=env or stand_in_env(),
    )  # fmt: skip


def summary_rows(sweep_dir: Path) -> dict[str, dict[str, Any]]:
    """The sweep summary's rows by job."""
    data = json.loads((sweep_dir / "sweep_summary.json").read_text())
    return {row["job"]: row for row in data["jobs"]}


def example_scores(run_dir: Path) -> list[tuple[str, int, float]]:
    rows = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]
    return sorted((r["prompt_id"], r["rollout"], r["score"]) for r in rows)


def slurm_jobs(sweep_dir: Path) -> list[str]:
    """The SLURM job ids of the sweep's jobs (submitit's folders), in job order."""
    folder = sweep_dir / ".submitit"
    if not folder.is_dir():
        return []
    ids = [p.name for p in folder.iterdir() if re.fullmatch(r"\d+_\d+", p.name)]
    return sorted(ids, key=lambda i: int(i.split("_")[1]))


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def evaluating(run_dir: Path) -> bool:
    """Whether the job in `run_dir` has its endpoints and is sending requests."""
    log = run_dir / "healthbench.log"
    return log.exists() and "examples x 1 rollouts" in log.read_text()


def test_a_sweep_through_slurm_equals_the_same_sweep_run_locally(tmp_path) -> None:
    grid = ("sampling.temperature=0.5,0.7",)
    runs = {}
    for where, launcher in (("local", ()), ("slurm", ON_SLURM)):
        env = {**stand_in_env(), "HEALTHBENCH_CACHE_DIR": str(tmp_path / f"cache-{where}")}
        result = run_sweep(tmp_path / where, *grid, *launcher, env=env)
        assert result.returncode == 0, result.stderr
        runs[where] = summary_rows(tmp_path / where)
    assert len(slurm_jobs(tmp_path / "slurm")) == 2  # it did go through SLURM
    assert runs["local"].keys() == runs["slurm"].keys() == {"0", "1"}
    for job in ("0", "1"):
        local, slurm = runs["local"][job], runs["slurm"][job]
        assert local["status"] == slurm["status"] == "completed"
        assert local["overrides"] == slurm["overrides"]
        for key in ("overall_score", "ci_low", "ci_high", "n", "tokens", "cost_usd"):
            assert local[key] == slurm[key], key
        assert example_scores(tmp_path / "local" / job) == example_scores(tmp_path / "slurm" / job)


def test_jobs_sharing_the_node_serve_each_its_own_model_on_its_own_port(tmp_path) -> None:
    """A sweep over model.name with the slurm_vllm preset (no GPU asked for here): both jobs on
    the one node at once, each serving its own model on its own port, each server stopped when
    its job ended. Each reply takes 3 s, so that each job lasts longer than SLURM takes to start
    the second one on a loaded machine."""
    on_gpu_nodes = ("hydra/launcher=slurm_vllm", *ON_SLURM[1:], "hydra.launcher.gpus_per_node=null")
    result = run_sweep(
        tmp_path, "model=vllm", "model.name=org/model-a,org/model-b",
        "offline_server.latency_ms=3000", *on_gpu_nodes,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = summary_rows(tmp_path)
    lives = {}
    for job, model in (("0", "org/model-a"), ("1", "org/model-b")):
        assert rows[job]["status"] == "completed" and rows[job]["model"] == model
        (life,) = server_lives(tmp_path / job / "vllm.log")
        assert life.model == model
        served = f"{model} served at http://127.0.0.1:{life.port}/v1"
        assert served in (tmp_path / job / "healthbench.log").read_text()
        assert_gone(life)
        lives[job] = life
    a, b = lives["0"], lives["1"]
    assert a.port != b.port
    assert a.stopped and b.stopped and a.started < b.stopped and b.started < a.stopped  # at once


def fake_sacct(tmp_path: Path) -> dict[str, str]:
    """The environment with a `sacct` that fails as it does where accounting is disabled."""
    folder = tmp_path / "no-accounting"
    folder.mkdir()
    script = folder / "sacct"
    script.write_text("#!/bin/sh\necho 'sacct: accounting storage is disabled' >&2; exit 1\n")
    script.chmod(0o755)
    env = stand_in_env()
    return {**env, "PATH": f"{folder}{os.pathsep}{env['PATH']}"}


@pytest.mark.parametrize("accounting", [True, False], ids=["sacct", "no-accounting"])
def test_a_job_slurm_fails_is_a_failed_job_and_the_sweep_completes(
    tmp_path, accounting: bool
) -> None:
    """Job 1's batch script fails before the harness starts (a setup line): the sweep still
    collects job 0 and writes its summary, which lists job 1 as failed with SLURM's reason and
    the job's log. Without accounting, squeue says how it ended: no endless polling."""
    sweep_dir = tmp_path / "sweep"
    fail_second = "hydra.launcher.setup=['test $SLURM_ARRAY_TASK_ID != 1 || exit 3']"
    result = run_sweep(
        sweep_dir, "sampling.temperature=0.5,0.7", *ON_SLURM, fail_second,
        env=stand_in_env() if accounting else fake_sacct(tmp_path),
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    rows = summary_rows(sweep_dir)
    assert rows["0"]["status"] == "completed"
    assert (sweep_dir / "0" / "summary.json").is_file()
    assert rows["1"]["status"] == "failed"
    job_id = slurm_jobs(sweep_dir)[1]
    assert "SLURM ended it: FAILED" in rows["1"]["error"]  # with its exit code, once sacct has it
    log = sweep_dir / ".submitit" / job_id / f"{job_id}_0_log.err"
    assert f"job {job_id}, log {log}" in rows["1"]["error"]
    assert rows["1"]["label"] == "T=0.7"  # named by its overrides though it never started
    assert "1 of 2 jobs failed (1)" in result.stderr
    assert (sweep_dir / "sweep_summary.md").is_file() and (sweep_dir / "report.html").is_file()


def job_pids(job_id: str) -> list[int]:
    """The harness processes of a running SLURM job (`scontrol listpids` of its own id: an
    array task `123_1` has one)."""
    own_id = subprocess.run(
        ["squeue", "-h", "-j", job_id, "-o", "%A"], capture_output=True, text=True, check=False
    ).stdout.strip()
    listed = subprocess.run(
        ["scontrol", "listpids", own_id], capture_output=True, text=True, check=False
    ).stdout.split("\n")[1:]
    harness = []
    for pid in [int(line.split()[0]) for line in listed if line.split()]:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if Path(argv[0].decode()).name.startswith("python") and b"submitit.core._submit" in argv:
            harness.append(pid)  # not srun, whose command line names the same module
    return harness


def sweep_with_job_1_stopped(
    sweep_dir: Path, stop: Callable[[str], None], *args: str
) -> tuple[dict[str, dict[str, Any]], str]:
    """Run a 2-job sweep through SLURM; once job 1 sends requests, `stop(its SLURM id)`. The
    sweep must end with exit status 1; its summary rows and job 1's SLURM id."""
    sweep = subprocess.Popen(
        sweep_command(sweep_dir, *args, *ON_SLURM), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, cwd=REPO, env=stand_in_env(),
    )  # fmt: skip
    try:
        wait_for(lambda: evaluating(sweep_dir / "1") and len(slurm_jobs(sweep_dir)) == 2, "job 1")
        job_id = slurm_jobs(sweep_dir)[1]
        stop(job_id)
        _, stderr = sweep.communicate(timeout=SWEEP_TIMEOUT_S)
    finally:
        sweep.kill()
    assert sweep.returncode == 1, stderr
    rows = summary_rows(sweep_dir)
    assert rows["0"]["status"] == "completed" and (sweep_dir / "0" / "summary.json").is_file()
    return rows, job_id


def kill_harness(job_id: str) -> None:
    """SIGKILL to the job's harness, as the kernel's OOM killer sends it."""
    wait_for(lambda: bool(job_pids(job_id)), f"the harness of SLURM job {job_id}")
    for pid in job_pids(job_id):
        os.kill(pid, 9)


def test_a_job_killed_mid_run_is_failed_resumable_and_its_server_is_gone(tmp_path) -> None:
    """Job 1's harness is killed outright (as the kernel's OOM killer does) while it serves
    its model, once it has written results: it is failed with SLURM's reason and the resume
    command; its server is gone; the resume finishes it, serving the model again."""
    sweep_dir = tmp_path / "sweep"
    job_dir = sweep_dir / "1"

    def kill_once_it_has_results(job_id: str) -> None:
        wait_for(lambda: (job_dir / "examples.jsonl").exists(), "job 1's first results")
        kill_harness(job_id)

    rows, job_id = sweep_with_job_1_stopped(
        sweep_dir, kill_once_it_has_results, "model=vllm", "model.name=org/model-a,org/model-b",
        "offline_server.latency_ms=3000",
    )  # fmt: skip
    assert rows["1"]["status"] == "failed"
    assert "SLURM ended it: FAILED" in rows["1"]["error"] and job_id in rows["1"]["error"]
    assert f"finish with: python -m healthbench_exp resume={job_dir}" in rows["1"]["error"]
    for job in ("0", "1"):
        (life,) = server_lives(sweep_dir / job / "vllm.log")
        # the parent-death signal and the guard stop it within seconds of the kill; an exited
        # server is reaped by whoever inherits it, so a zombie counts as gone
        wait_for(lambda pid=life.pid: not running(pid), f"job {job}'s server to end", 15)
    resume_to_completion(job_dir)
    assert len(example_scores(job_dir)) == 3
    # the log is appended, not truncated: the killed job's server, then the resume's, stopped
    # (a killed run logs no stop of its own, so the stops cannot be paired with the starts)
    killed, resumed = server_lives(job_dir / "vllm.log")
    assert (killed.pid, killed.port) == (life.pid, life.port) and resumed.pid != life.pid
    assert not alive(resumed.pid) and not listening(resumed.port)


def running(pid: int) -> bool:
    """Whether `pid` is a live process (not gone, not a zombie awaiting its reaper)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("signal", ["USR2", "TERM"])
def test_slurms_time_limit_signal_ends_the_job_interrupted_and_resumable(
    tmp_path, signal: str
) -> None:
    """SIGUSR2, which SLURM sends `signal_delay_s` before a job's time limit (`scancel
    --signal=USR2` sends it now), and SIGTERM (the limit itself, or scancel): the job ends
    `interrupted` with the resume command, the other job completes, the sweep summary is
    written; the resume finishes the job."""
    sweep_dir = tmp_path / "sweep"

    def scancel(job_id: str) -> None:
        subprocess.run(
            ["scancel", *([] if signal == "TERM" else ["--signal=USR2"]), job_id], check=True
        )

    rows, _ = sweep_with_job_1_stopped(
        sweep_dir, scancel, "sampling.temperature=0.5,0.7", "offline_server.latency_ms=3000"
    )
    assert rows["1"]["status"] == "interrupted"
    job_dir = sweep_dir / "1"
    assert f"interrupted by SIG{signal}" in rows["1"]["error"]
    assert f"finish with: python -m healthbench_exp resume={job_dir}" in rows["1"]["error"]
    resume_to_completion(job_dir)
    assert len(example_scores(job_dir)) == 3

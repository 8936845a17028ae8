"""A stopped sweep tells the truth: SIGINT, SIGTERM or SIGHUP during job 1 of a three-job sweep
ends it cleanly (job 1 `interrupted`, no lock left), and its summary lists every job its
`multirun.yaml` planned: the interrupted one with its `resume=`, the one never started with its
own overrides; `aggregate` exits 1 until each is finished by the command given, then 0 with
every job completed. The sweep's cost is the sum over every invocation, matching what the
endpoint received.

End to end: `python -m healthbench_exp -m` in a process of its own, a real signal
(`tests.signal_runs.stop_signalled`: the set-up it shares with tests/engine/test_stop_usage.py).
"""

from __future__ import annotations

import json
import shlex
import signal
from pathlib import Path

import pytest

from tests.cli.test_run_lock import lines
from tests.e2e.test_e2e import run_cli, run_module
from tests.signal_runs import (
    IN_FLIGHT,
    STOPPING,
    paid_requests,
    received,
    rows_written,
    stop_signalled,
)


def finish_commands(err: str) -> dict[str, str]:
    """The jobs the stop line names, each with the command that finishes it."""
    found = {}
    for line in err.splitlines():
        if line.startswith("job ") and "; finish with: python -m healthbench_exp " in line:
            job = line.split()[1]
            found[job] = line.split("; finish with: ", 1)[1]
        assert "leaked semaphore" not in line
    return found


@pytest.mark.parametrize("signum", STOPPING, ids=lambda s: signal.Signals(s).name)
def test_a_stopped_sweep_lists_every_unfinished_job_with_its_finish_command(
    loopback_server, tmp_path: Path, signum: int
) -> None:
    server = loopback_server(latency_ms=300)
    sweep = tmp_path / "sweep"
    args = ["sampling.num_examples=8", "sampling.temperature=0,0.5,1",
            f"hydra.sweep.dir={sweep}"]  # fmt: skip
    ready = rows_written(2, sweep / "1" / "examples.jsonl")
    code, err = stop_signalled(server, tmp_path, args, ready, [signum], multirun=True)

    assert code == 128 + signum, err
    assert "Traceback" not in err
    commands = finish_commands(err)
    assert set(commands) == {"1", "2"}
    assert commands["1"] == f"python -m healthbench_exp resume={sweep / '1'}"
    # job 2 never started: its own overrides (as Hydra gave them), into its own folder
    never = shlex.split(commands["2"])
    assert never[:3] == ["python", "-m", "healthbench_exp"]
    assert "sampling.temperature=1" in never and never[-1] == f"hydra.run.dir={sweep / '2'}"
    assert err.strip().splitlines()[-1].endswith(commands["2"])  # the last line: how to finish
    status = json.loads((sweep / "1" / "status.json").read_text())
    assert status["status"] == "interrupted"
    assert not (sweep / "1" / ".lock").exists() and not (sweep / "2").exists()
    jobs = json.loads((sweep / "sweep_summary.json").read_text())["jobs"]
    assert [j["status"] for j in jobs] == ["completed", "interrupted", "not_started"]
    assert jobs[2]["temperature"] == 1 and jobs[2]["judge"] == jobs[0]["judge"]  # its settings

    stopped = run_module("healthbench_exp.aggregate", str(sweep))
    assert stopped.returncode == 1, stopped.stderr
    assert "runs: 3 (1 completed, 1 interrupted, 1 not_started)" in stopped.stdout
    assert "not run" not in stopped.stdout and "cost: unknown" not in stopped.stdout
    assert finish_commands(stopped.stderr) == commands

    for job in ("1", "2"):
        finished = run_cli(*shlex.split(commands[job])[3:])
        assert finished.returncode == 0, finished.stderr
    done = run_module("healthbench_exp.aggregate", str(sweep))
    assert done.returncode == 0, done.stderr
    assert "runs: 3 (3 completed)" in done.stdout
    summary = json.loads((sweep / "sweep_summary.json").read_text())
    usages = [json.loads((sweep / j / "summary.json").read_text())["usage"] for j in "012"]
    # every paid call is in the sweep's figures: the cut-short invocation's too
    assert len(usages[1]["invocations"]) == 2
    assert summary["cost_usd"] == pytest.approx(sum(u["total_cost_usd"] for u in usages))
    paid = sum(paid_requests(u) for u in usages)
    assert paid <= received(server) <= paid + IN_FLIGHT


def test_ctrl_c_of_a_parallel_sweep_ends_every_started_job_cleanly(
    loopback_server, tmp_path: Path
) -> None:
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="the `launchers` extra")
    server = loopback_server(latency_ms=300)
    sweep = tmp_path / "sweep"
    args = ["sampling.temperature=0,0.5,1", "hydra/launcher=parallel",
            "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}"]  # fmt: skip
    # 24 rows each: both jobs run at the signal
    ready = rows_written(1, *(sweep / job / "examples.jsonl" for job in "01"))
    # to the sweep's main process: it stops the workers
    code, err = stop_signalled(
        server, tmp_path, args, ready, [signal.SIGINT], in_flight=None, multirun=True
    )

    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "leaked semaphore" not in err
    commands = finish_commands(err)
    assert commands["0"] == f"python -m healthbench_exp resume={sweep / '0'}"
    assert commands["1"] == f"python -m healthbench_exp resume={sweep / '1'}"
    assert commands["2"].endswith(f"hydra.run.dir={sweep / '2'}")  # never started
    assert err.strip().splitlines()[-1].endswith(commands["2"])
    for job in "01":
        assert json.loads((sweep / job / "status.json").read_text())["status"] == "interrupted"
        assert not (sweep / job / ".lock").exists()
        assert lines(sweep / job / "invocations.jsonl"), "the job's spend was not recorded"
    assert not (sweep / "2").exists() and not (sweep / ".stopping").exists()
    stopped = run_module("healthbench_exp.aggregate", str(sweep))
    assert stopped.returncode == 1 and finish_commands(stopped.stderr) == commands


def test_a_never_started_job_of_a_swept_config_group_shows_its_model_and_judge(
    loopback_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-m model=offline,gpt41mini` stopped during job 0: job 1 never started, and its summary
    row names the model its config group picks (composed as its launcher would have), not a
    blank."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")  # gpt41mini's key: the server takes any
    server = loopback_server(latency_ms=300)
    sweep = tmp_path / "sweep"
    args = ["model=offline,gpt41mini", f"hydra.sweep.dir={sweep}"]
    ready = rows_written(2, sweep / "0" / "examples.jsonl")
    code, err = stop_signalled(server, tmp_path, args, ready, [signal.SIGINT], multirun=True)

    assert code == 130, err
    assert set(finish_commands(err)) == {"0", "1"}
    for summary in (sweep, tmp_path / "again"):  # the sweep's own, and aggregate's
        if summary != sweep:
            again = run_module("healthbench_exp.aggregate", str(sweep), "--out", str(summary))
            assert again.returncode == 1, again.stderr  # a job is not finished
        jobs = json.loads((summary / "sweep_summary.json").read_text())["jobs"]
        assert [j["status"] for j in jobs] == ["interrupted", "not_started"]
        assert [j["model"] for j in jobs] == ["offline-model", "gpt-4.1-mini-2025-04-14"]
        assert jobs[1]["judge"] == jobs[0]["judge"] == "offline-judge"
        assert "gpt-4.1-mini-2025-04-14" in (summary / "sweep_summary.md").read_text()

"""A stopping signal as a run ends: a run that is complete ends `completed`.

- every row started and every call in flight at the signal answered within the grace: nothing
  was held back, the run is complete (status completed, exit 0, not partial); a call that
  would have gone out after the halt (a row's judge calls) leaves it short, interrupted;
- a signal while the run writes its outputs (the W&B run finishing) lets them finish: the run is
  complete, and W&B loses nothing.

End to end: `python -m healthbench_exp` in a process of its own, real signals, loopback
endpoints in processes of their own, W&B offline.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.test_run_lock import wait_for
from tests.conftest import LoopbackServer
from tests.engine.test_stop_in_flight import invocations
from tests.output.test_tracking import wandb_env
from tests.signal_runs import paid_requests
from tests.wandb_log import read_run

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CRITERIA = 106  # the judge calls of the bundled sample's 24 rows (one per criterion)


def start(args: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    env = {**os.environ, **wandb_env(tmp_path), "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "healthbench_exp", "experiment=demo", "runner.progress=false",
         f"cache.dir={tmp_path / 'cache'}", *args],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def start_on(
    model: LoopbackServer, judge: LoopbackServer, run_dir: Path, tmp_path: Path, *args: str
) -> subprocess.Popen[str]:
    """`start` with the model and the judge on their own loopback endpoints, W&B off."""
    return start(
        ["wandb=disabled", "model.builtin=false", f"model.base_url={model.base_url}",
         "judge.builtin=false", f"judge.base_url={judge.base_url}", *args,
         f"hydra.run.dir={run_dir}"],
        tmp_path,
    )  # fmt: skip


def test_a_run_whose_last_calls_all_answer_in_the_grace_is_completed(
    loopback_server, tmp_path: Path
) -> None:
    model = loopback_server(latency_ms=0)
    judge = loopback_server(latency_ms=5000)  # every judge call is in flight at the signal
    run_dir = tmp_path / "run"
    process = start_on(model, judge, run_dir, tmp_path, "runner.stop_grace_s=60")
    # every row started, every model call answered, every judge call sent: nothing left to send
    wait_for(lambda: judge.stats()["requests"] == SAMPLE_CRITERIA, process)
    assert judge.stats()["in_flight"], "a judge call answered before the signal: too slow a test"
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "waiting up to 60 s" in out
    assert "every call answered within the grace, the run is complete" in out
    last = err.strip().splitlines()[-1]
    assert last == "SIGINT (Ctrl-C) came as the run finished: it is complete"
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is False
    assert summary["counts"]["rows_not_run"] == 0
    (only,) = invocations(run_dir)
    assert paid_requests(only["usage"]) == 24 + SAMPLE_CRITERIA


def test_a_run_whose_rows_all_started_but_whose_judge_calls_were_not_sent_is_interrupted(
    loopback_server, tmp_path: Path
) -> None:
    """Every row started and every call in flight answered within the grace, but the rows'
    judge calls came after the halt and were never sent: the run is short of its end, not
    complete (it ended `completed`, then failed with "no example could be scored", as SLURM's
    scancel found when it came as a 3-row job's model calls were out)."""
    model = loopback_server(latency_ms=8000)  # every model call is in flight at the signal
    judge = loopback_server(latency_ms=0)
    run_dir = tmp_path / "run"
    process = start_on(model, judge, run_dir, tmp_path, "runner.max_concurrent=24")
    wait_for(lambda: model.stats()["in_flight"] == 24, process)  # every row started
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert "every call answered within the grace" not in out
    assert judge.stats()["requests"] == 0  # nothing sent after the halt
    assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is True
    assert err.strip().splitlines()[-1].endswith(f"resume={run_dir}")
    (only,) = invocations(run_dir)
    assert paid_requests(only["usage"]) == 24  # the model calls, answered in the grace


def test_a_signal_while_the_outputs_are_written_lets_them_finish_and_the_run_is_completed(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    process = start(["wandb=offline", f"hydra.run.dir={run_dir}"], tmp_path)
    # the local files are written first; W&B finishes its run after them
    wait_for(lambda: (run_dir / "summary.json").exists(), process, timeout_s=240)
    process.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "lost the W&B worker" not in err + out
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    assert err.strip().splitlines()[-1] == "SIGTERM came as the run finished: it is complete"
    assert "SIGTERM as the run writes its outputs" in out, (out, time.monotonic() - signalled)
    wandb_runs = sorted((tmp_path / "wandb_dir" / "wandb").glob("offline-run-*"))
    assert [read_run(r).exit_code for r in wandb_runs] == [0]

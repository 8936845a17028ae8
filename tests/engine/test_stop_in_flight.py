"""The requests in flight at a stopping signal are paid for: the run waits for their answers
(`runner.stop_grace_s`) and counts them, or, leaving before they answer (a second Ctrl-C, no
grace), counts them as abandoned with an estimate of their cost; so the run's usage over its
invocations equals what the endpoint received.

End to end: `python -m healthbench_exp` in a process of its own, real signals, against a
loopback endpoint in a process of its own whose counters (`/stats`) outlive the runs; the last
test sends SIGHUP to the whole process group, as closing a tmux session does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.test_run_lock import lines, start_run, wait_for
from tests.conftest import LoopbackServer
from tests.e2e.test_e2e import run_cli
from tests.engine.test_resume_records import endpoint_args
from tests.engine.test_run_stops import partial_summary_written
from tests.output.test_tracking import wandb_env
from tests.signal_runs import paid_requests, received
from tests.wandb_log import read_run

REPO = Path(__file__).resolve().parents[2]
HELD_MS = 20_000  # a reply this slow is still in flight when the test leaves: abandoned
PROMPT_S = 10.0  # a stop that does not wait for the answers ends well within HELD_MS


def started(server: LoopbackServer, in_flight: int) -> None:
    """Wait until the endpoint holds `in_flight` requests."""
    deadline = time.monotonic() + 120
    while server.stats()["in_flight"] < in_flight:
        assert time.monotonic() < deadline, server.stats()
        time.sleep(0.02)


def invocations(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in lines(run_dir / "invocations.jsonl")]


def abandoned(usage: dict) -> int:
    """The requests abandoned in flight in a usage record (0: none, or an older line)."""
    return sum(usage[role].get("abandoned_in_flight", 0) for role in ("model", "judge"))


def test_the_requests_in_flight_at_ctrl_c_are_answered_counted_and_not_sent_again(
    loopback_server, tmp_path: Path
) -> None:
    server = loopback_server(latency_ms=1000)
    run_dir = tmp_path / "run"
    process = start_run(
        *endpoint_args(server.base_url), "runner.max_concurrent=2",
        f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    wait_for(lambda: len(lines(run_dir / "examples.jsonl")) >= 2, process)
    started(server, 1)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err
    (first,) = invocations(run_dir)
    # every call the endpoint received is counted: none was left unread
    assert paid_requests(first["usage"]) == received(server)
    assert abandoned(first["usage"]) == 0  # every request in flight was answered
    waited = [line for line in out.splitlines() if "stopping on SIGINT (Ctrl-C)" in line]
    assert waited and "in flight, waiting up to 15 s" in waited[0], out
    assert "Ctrl-C again to leave now" in waited[0]
    assert err.strip().splitlines()[-1].endswith(f"resume={run_dir}")
    assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"

    resumed = run_cli(f"resume={run_dir}")
    assert resumed.returncode == 0, resumed.stderr
    usage = json.loads((run_dir / "summary.json").read_text())["usage"]
    assert len(usage["invocations"]) == 2
    # no call sent twice, no paid call uncounted
    assert paid_requests(usage) == received(server)
    assert "abandoned_cost_usd" not in usage


def held_run(
    server: LoopbackServer, tmp_path: Path, grace_s: float
) -> tuple[subprocess.Popen[str], Path]:
    """A run on `server` with 2 calls in flight (answered only after HELD_MS) and
    `runner.stop_grace_s=grace_s`, once both calls are out."""
    run_dir = tmp_path / "run"
    process = start_run(
        *endpoint_args(server.base_url), "runner.max_concurrent=2",
        f"runner.stop_grace_s={grace_s}", f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    started(server, 2)
    return process, run_dir


def left_counting(process: subprocess.Popen[str], run_dir: Path, since: float) -> tuple[str, float]:
    """Wait for the run to exit; assert it left within PROMPT_S of `since` and counted its 2
    calls in flight as abandoned, in invocations.jsonl and its last line; return its stdout and
    the seconds from `since` to its exit."""
    out, err = process.communicate(timeout=120)
    took = time.monotonic() - since
    assert took < PROMPT_S, f"{took:.1f} s from the signal to the exit"
    assert "Traceback" not in err
    (cut,) = invocations(run_dir)
    assert abandoned(cut["usage"]) == 2
    assert paid_requests(cut["usage"]) == 0
    last = err.strip().splitlines()[-1]
    assert "2 requests abandoned in flight (model 2), about $" in last, last
    assert last.endswith(f"resume={run_dir}")
    return out, took


def test_a_second_ctrl_c_leaves_at_once_and_counts_what_it_abandons(
    loopback_server, tmp_path: Path
) -> None:
    process, run_dir = held_run(loopback_server(latency_ms=HELD_MS), tmp_path, grace_s=60)
    process.send_signal(signal.SIGINT)
    wait_for(lambda: "stopping on SIGINT" in "".join(lines(run_dir / "healthbench.log")), process)
    assert process.poll() is None  # waiting for the answers
    second = time.monotonic()
    process.send_signal(signal.SIGINT)
    left_counting(process, run_dir, second)
    assert process.returncode == 130
    assert not (run_dir / "summary.json").exists()  # it left at once: no partial summary
    (cut,) = invocations(run_dir)
    assert cut["usage"]["model"]["abandoned_in_flight"] == 2
    assert cut["usage"]["model"]["abandoned_cost_usd"] > 0
    assert cut["usage"]["abandoned_cost_usd"] == cut["usage"]["model"]["abandoned_cost_usd"]


def test_no_grace_leaves_at_the_first_signal_and_counts_what_it_abandons(
    loopback_server, tmp_path: Path
) -> None:
    process, run_dir = held_run(loopback_server(latency_ms=HELD_MS), tmp_path, grace_s=0)
    process.send_signal(signal.SIGTERM)
    out, _took = left_counting(process, run_dir, time.monotonic())
    assert process.returncode == 143
    assert "stopping on" not in out  # no wait


def test_the_end_of_the_grace_leaves_and_counts_what_is_still_in_flight(
    loopback_server, tmp_path: Path
) -> None:
    process, run_dir = held_run(loopback_server(latency_ms=HELD_MS), tmp_path, grace_s=1)
    signalled = time.monotonic()
    process.send_signal(signal.SIGHUP)
    out, took = left_counting(process, run_dir, signalled)
    assert process.returncode == 129
    assert "waiting up to 1 s for their answers" in out
    assert took >= 1.0  # it waited out the grace
    # the grace's end is said, with what it abandons
    assert "the 1 s grace ended: leaving now; 2 requests still in flight abandoned" in out, out
    # the first signal's ending: the partial summary with the spend, abandoned apart, the report
    partial_summary_written(run_dir)
    (cut,) = invocations(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["usage"]["model"]["abandoned_in_flight"] == 2
    assert summary["usage"]["abandoned_cost_usd"] == cut["usage"]["abandoned_cost_usd"] > 0
    assert out.strip().splitlines()[-1] == f"outputs: {run_dir}"


def group_members(pgid: int) -> list[str]:
    """The live processes (not zombies) of process group `pgid`: `pid command` each."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:  # it ended meanwhile
            continue
        command, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
        state, _parent, group = rest.split()[:3]
        if int(group) == pgid and state != "Z":
            members.append(f"{stat.parent.name} {command}")
    return members


def test_a_sighup_to_the_whole_process_group_ends_the_run_resumable_and_leaves_no_process(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, **wandb_env(tmp_path), "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "healthbench_exp", "experiment=demo", "wandb=offline",
         "runner.progress=false", "runner.max_concurrent=2", "offline_server.latency_ms=1000",
         f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={run_dir}"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own group, as a tmux session's shell has
    )  # fmt: skip
    pgid = os.getpgid(process.pid)
    wait_for(lambda: len(lines(run_dir / "examples.jsonl")) >= 2, process)
    assert len(group_members(pgid)) > 1  # the built-in server and the W&B worker run
    os.killpg(pgid, signal.SIGHUP)  # what closing the terminal sends
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 129, err
    assert "Traceback" not in err
    recorded = json.loads((run_dir / "status.json").read_text())
    resume = f"python -m healthbench_exp resume={run_dir}"
    assert recorded["status"] == "interrupted" and resume in recorded["error"]
    assert lines(run_dir / "healthbench.log")[-1].endswith(err.strip().splitlines()[-1])
    assert not (run_dir / ".lock").exists()
    assert len(invocations(run_dir)) == 1
    # the W&B worker outlived the hang-up and finished its run as stopped by it
    wandb_runs = sorted((tmp_path / "wandb_dir" / "wandb").glob("offline-run-*"))
    assert [read_run(r).exit_code for r in wandb_runs] == [129]
    deadline = time.monotonic() + 60
    while left := group_members(pgid):  # the run stopped its helpers before it exited
        assert time.monotonic() < deadline, f"left in the group: {left}"
        time.sleep(0.05)

"""The lock names the command its holder was started with, as it was typed: a second `resume=R`
while the first still runs is told `python -m healthbench_exp resume=R`, not the run's own
arguments that the resume is rewritten into internally."""

from __future__ import annotations

import json
import signal

from tests.cli.test_run_lock import lines, start_run, wait_for
from tests.e2e.test_e2e import run_cli

SLOW = ("experiment=demo", "wandb.mode=disabled", "runner.progress=false",
        "runner.max_concurrent=1", "offline_server.latency_ms=300")  # fmt: skip


def test_a_second_resume_is_told_the_first_resumes_command(tmp_path) -> None:
    run_dir = tmp_path / "run"
    first = start_run(*SLOW, f"hydra.run.dir={run_dir}")
    wait_for(lambda: len(lines(run_dir / "examples.jsonl")) >= 1, first)
    first.send_signal(signal.SIGINT)
    first.communicate(timeout=120)
    assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"
    done = len(lines(run_dir / "examples.jsonl"))
    resume = start_run(f"resume={run_dir}")
    try:
        wait_for(lambda: len(lines(run_dir / "examples.jsonl")) > done, resume)  # holds the lock
        second = run_cli(f"resume={run_dir}")
    finally:
        resume.send_signal(signal.SIGINT)
        resume.communicate(timeout=120)
    assert second.returncode == 2
    message = second.stderr.strip()
    assert f"is in use by another run (pid {resume.pid} on " in message, message
    assert f" -m healthbench_exp resume={run_dir}); wait for it" in message, message
    assert "hydra.output_subdir" not in message and "experiment=demo" not in message

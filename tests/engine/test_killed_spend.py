"""What a killed invocation paid is counted after `resume=`: SIGKILL (the OOM killer, a node
failure, SLURM after its grace) leaves no usage in `invocations.jsonl`, but the run's spend
journal (`model.spend_journal`) holds every answered call; the resume records the killed
invocation from it, its requests in flight at the kill apart, as an estimate.

End to end: `python -m healthbench_exp` in a process of its own against a loopback endpoint
that counts the requests it received, killed with a real SIGKILL, then resumed.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.cli.test_run_lock import lines, start_run, wait_for
from tests.e2e.test_e2e import run_cli
from tests.engine.test_resume_records import endpoint_args
from tests.signal_runs import IN_FLIGHT, paid_requests, received, rows_written


def abandoned(usage: dict) -> int:
    """The requests of a usage record abandoned in flight, model's and judge's."""
    return sum(int(usage[role].get("abandoned_in_flight", 0)) for role in ("model", "judge"))


def test_a_killed_invocations_paid_calls_are_counted_after_resume(
    loopback_server, tmp_path: Path
) -> None:
    server = loopback_server(latency_ms=300)
    run_dir = tmp_path / "run"
    process = start_run(
        *endpoint_args(server.base_url), "runner.max_concurrent=2",
        f"runner.max_in_flight={IN_FLIGHT}", f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    wait_for(rows_written(3, run_dir / "examples.jsonl"), process)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert not (run_dir / "invocations.jsonl").exists()  # the killed one recorded nothing
    killed_received = received(server)

    resumed = run_cli(f"resume={run_dir}")
    assert resumed.returncode == 0, resumed.stderr
    usage = json.loads((run_dir / "summary.json").read_text())["usage"]
    invocations = usage["invocations"]
    assert len(invocations) == 2
    killed, resume = invocations
    assert killed["killed"] is True and "killed" not in resume
    # the killed invocation's answered calls are its paid calls; those in flight at the kill
    # (the endpoint answered them, the run never read them) are abandoned, estimated apart
    assert paid_requests(killed) >= 3
    assert 0 <= abandoned(killed) <= IN_FLIGHT
    # every request the endpoint received was journalled first; one journalled as the kill came
    # may not have left the process yet: in flight means maybe received, maybe paid
    assert paid_requests(killed) <= killed_received <= paid_requests(killed) + abandoned(killed)
    assert killed["total_cost_usd"] > 0
    if abandoned(killed):
        assert killed["abandoned_cost_usd"] > 0
    # the resume paid exactly what the endpoint received since; the killed calls it found in
    # the cache are replays, not paid again
    assert paid_requests(resume) == received(server) - killed_received
    # the run's paid requests are those received, but for the killed ones in flight
    unread = killed_received - paid_requests(killed)  # received at the kill, never read
    assert paid_requests(usage) + unread == received(server)
    assert usage["total_cost_usd"] == pytest.approx(sum(i["total_cost_usd"] for i in invocations))
    assert usage["total_cost_usd"] > resume["total_cost_usd"]
    tokens = sum(
        usage[r]["prompt_tokens"] + usage[r]["completion_tokens"] for r in ("model", "judge")
    )
    assert tokens == sum(
        i[r]["prompt_tokens"] + i[r]["completion_tokens"]
        for i in invocations
        for r in ("model", "judge")
    )
    # each invocation is recorded once, with its journal's id: a later resume counts none again
    recorded = [json.loads(line) for line in lines(run_dir / "invocations.jsonl")]
    assert len(recorded) == 2 and len({entry["journal"] for entry in recorded}) == 2
    # and said, on the console and in the log
    said = "a killed invocation's spend is counted from its journal"
    assert said in resumed.stdout + resumed.stderr  # on the console
    assert said in (run_dir / "healthbench.log").read_text()

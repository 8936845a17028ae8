"""Every stopping signal is a clean stop that keeps what was paid for: SIGINT (Ctrl-C), SIGTERM
and SIGHUP (a closed terminal) end a run the same way (results written, status `interrupted`,
the resume command the last line on the console and in healthbench.log), and the invocation
they cut short records its usage in `invocations.jsonl`, so after `resume=` the run's usage is
the sum over its invocations and matches what the endpoint counted.

End to end: `python -m healthbench_exp` in a process of its own, a real signal, as a user
sends it (`tests.signal_runs.stop_signalled`).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.cli.test_run_lock import lines
from tests.e2e.test_e2e import run_cli
from tests.signal_runs import (
    IN_FLIGHT,
    STOPPING,
    paid_requests,
    received,
    rows_written,
    stop_signalled,
)


@pytest.mark.parametrize("signum", STOPPING, ids=lambda s: signal.Signals(s).name)
def test_every_signal_stops_the_same_way_and_its_spend_is_counted(
    loopback_server, tmp_path: Path, signum: int
) -> None:
    server = loopback_server(latency_ms=300)
    run_dir = tmp_path / "run"
    ready = rows_written(3, run_dir / "examples.jsonl")
    code, err = stop_signalled(server, tmp_path, [f"hydra.run.dir={run_dir}"], ready, [signum])

    name = signal.Signals(signum).name
    resume = f"python -m healthbench_exp resume={run_dir}"
    assert code == 128 + signum, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted by {name}") and last.endswith(f"finish with: {resume}")
    assert lines(run_dir / "healthbench.log")[-1].endswith(last)  # the terminal may be gone
    recorded = json.loads((run_dir / "status.json").read_text())
    assert recorded["status"] == "interrupted" and resume in recorded["error"]
    assert not (run_dir / ".lock").exists()
    # the cut-short invocation's spend is recorded: each paid call it read the reply of
    cut = [json.loads(line) for line in lines(run_dir / "invocations.jsonl")]
    assert len(cut) == 1, "the interrupted invocation recorded no usage"
    first_paid = paid_requests(cut[0]["usage"])
    first_received = received(server)
    assert 3 <= first_paid <= first_received <= first_paid + IN_FLIGHT
    assert cut[0]["usage"]["total_cost_usd"] > 0

    resumed = run_cli(f"resume={run_dir}")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    usage = summary["usage"]
    invocations = usage["invocations"]
    assert len(invocations) == 2
    # the resume's paid calls are exactly what the endpoint received since
    assert paid_requests(invocations[1]) == received(server) - first_received
    # the run's usage is the sum over its invocations, the first one's included
    assert paid_requests(usage) == first_paid + paid_requests(invocations[1])
    assert usage["total_cost_usd"] == pytest.approx(sum(i["total_cost_usd"] for i in invocations))
    assert usage["total_cost_usd"] > invocations[1]["total_cost_usd"]


def test_a_second_ctrl_c_still_records_the_spend(loopback_server, tmp_path: Path) -> None:
    server = loopback_server(latency_ms=300)
    run_dir = tmp_path / "run"
    ready = rows_written(3, run_dir / "examples.jsonl")
    # impatient: a second Ctrl-C while it unwinds
    twice = [signal.SIGINT, signal.SIGINT]
    code, err = stop_signalled(server, tmp_path, [f"hydra.run.dir={run_dir}"], ready, twice)
    assert code == 130, err
    assert "Traceback" not in err
    assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"
    cut = [json.loads(line) for line in lines(run_dir / "invocations.jsonl")]
    assert len(cut) == 1
    assert 3 <= paid_requests(cut[0]["usage"]) <= received(server)

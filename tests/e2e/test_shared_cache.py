"""Runs that share one response cache pay once for each call (`model.cache.claims`): two demo
runs started together on a fresh cache send each distinct request once between them, score
alike, and their costs add up to one run's (the calls one made are the other's cache replays);
a run whose calls another run had claimed sends them itself when that run is killed with -9.

End to end: `python -m healthbench_exp` in processes of their own, against one loopback
endpoint whose `/stats` count what it received.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from healthbench_exp.model.cache.claims import WAITING
from tests.cli.test_run_lock import lines, start_run, wait_for
from tests.e2e.test_e2e import run_cli
from tests.engine.test_resume_records import endpoint_args
from tests.engine.test_stop_usage import received

ROLES = ("model", "judge")


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def test_two_runs_started_together_on_a_fresh_cache_pay_once(loopback_server, tmp_path) -> None:
    server = loopback_server(latency_ms=300)
    args = endpoint_args(server.base_url)
    alone = run_cli(*args, f"cache.dir={tmp_path / 'own'}", f"hydra.run.dir={tmp_path / 'one'}")
    assert alone.returncode == 0, alone.stderr
    one_run = summary(tmp_path / "one")
    distinct_calls = received(server)
    server.reset()

    shared = f"cache.dir={tmp_path / 'shared'}"
    runs = [tmp_path / "a", tmp_path / "b"]
    processes = [start_run(*args, shared, f"hydra.run.dir={run}") for run in runs]
    for process in processes:
        _out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err

    assert received(server) == distinct_calls  # was twice as many: both runs paid
    both = [summary(run) for run in runs]
    for run in both:
        assert run["metrics"] == one_run["metrics"]
    for role in ROLES:
        paid = [run["usage"][role]["requests"] for run in both]
        replayed = [run["usage"][role]["cache_hits"] for run in both]
        assert sum(paid) == one_run["usage"][role]["requests"]
        assert [p + r for p, r in zip(paid, replayed, strict=True)] == [sum(paid)] * 2
    total = sum(run["usage"]["total_cost_usd"] for run in both)
    assert total == pytest.approx(one_run["usage"]["total_cost_usd"], rel=1e-9)


def test_a_run_waiting_on_a_killed_runs_calls_sends_them_itself(loopback_server, tmp_path) -> None:
    server = loopback_server(latency_ms=3000)  # the first run's model calls are out for 3 s
    cache = f"cache.dir={tmp_path / 'cache'}"
    args = [*endpoint_args(server.base_url), "sampling.num_examples=4", cache]
    first = start_run(*args, f"hydra.run.dir={tmp_path / 'first'}")
    wait_for(lambda: server.stats()["in_flight"] > 0, first)
    second_dir = tmp_path / "second"
    second = start_run(*args, f"hydra.run.dir={second_dir}")
    waiting = WAITING.split("%s")[-1]
    wait_for(lambda: any(waiting in line for line in lines(second_dir / "healthbench.log")), second)
    first.send_signal(signal.SIGKILL)  # its claims go with it: no reply was stored
    first.wait()

    _out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err
    usage = summary(second_dir)["usage"]
    assert usage["model"]["cache_hits"] == 0  # the killed run stored nothing
    stats = server.stats()
    assert stats["model_requests"] == 2 * usage["model"]["requests"]  # sent by each run
    assert stats["judge_requests"] == usage["judge"]["requests"]

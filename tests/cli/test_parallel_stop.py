"""One stopping signal to a parallel sweep (`hydra/launcher=parallel`, joblib's workers) counts
once, wherever it lands: to the whole group (a terminal's Ctrl-C, `kill -INT/-TERM -PGID`,
SLURM's scancel: it reaches every worker directly AND through the main process) or to the main
process alone (then only through it), with a terminal or without. Every job gets its grace:
it abandons none of its calls in flight (each answers within the grace), ends `interrupted`,
and the sweep's last lines give each job's resume command.

End to end: `python -m healthbench_exp -m` in a session of its own (a pty as its terminal, or
none), a real signal, a loopback endpoint whose replies take 1 s.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from tests.cli.test_run_lock import lines, wait_for
from tests.engine.test_resume_records import endpoint_args
from tests.signal_deliveries import DELIVERIES, Delivery, abandoned_calls, deliver, start, status
from tests.signal_runs import delivered
from tests.sweep.test_sweep_stops import finish_commands

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a pty, process groups")
# the ways whose stop was lost before (a second, passed-on copy ended each job's grace): run in
# the quick suite; the others with the slow tests
QUICK = {"SIGINT-group-tty", "SIGTERM-group-notty"}


def sweep_stopped(loopback_server, tmp_path: Path, delivery: Delivery) -> tuple[Path, int, str]:
    """A 2-job parallel sweep stopped by `delivery` while both jobs have calls in flight: the
    sweep's folder, exit code and output."""
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="the `launchers` extra")
    server = loopback_server(latency_ms=1000)
    sweep = tmp_path / "sweep"
    command = [
        sys.executable, "-m", "healthbench_exp", "-m", *endpoint_args(server.base_url),
        "runner.max_concurrent=2", f"cache.dir={tmp_path / 'cache'}",
        "sampling.temperature=0,0.5", "hydra/launcher=parallel", "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip

    def ready() -> bool:  # both jobs run, each with calls in flight
        jobs_run = all(lines(sweep / job / "examples.jsonl") for job in "01")
        return jobs_run and server.stats()["in_flight"] >= 2

    code, output = delivered(command, tmp_path / "sweep.log", delivery, ready)
    return sweep, code, output


@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(d, id=d.name, marks=() if d.name in QUICK else pytest.mark.slow)
        for d in DELIVERIES
    ],
)
def test_one_signal_to_a_parallel_sweep_gives_every_job_its_grace(
    loopback_server, tmp_path: Path, delivery: Delivery
) -> None:
    sweep, code, output = sweep_stopped(loopback_server, tmp_path, delivery)

    assert code == 128 + delivery.signum, output[-3000:]
    assert "Traceback" not in output and "leaked semaphore" not in output
    assert "abandoned in flight" not in output, output[-3000:]  # no job ended its grace early
    assert "again to leave now" in output  # each job waited for its calls
    for job in "01":
        assert status(sweep / job) == "interrupted", output[-3000:]
        assert abandoned_calls(sweep / job) == 0, output[-3000:]
    commands = finish_commands(output)
    assert commands == {job: f"python -m healthbench_exp resume={sweep / job}" for job in "01"}
    assert output.strip().splitlines()[-1].endswith(commands["1"])  # how to finish, last


@pytest.mark.slow
def test_a_second_signal_to_a_parallel_sweep_leaves_at_once(
    loopback_server, tmp_path: Path
) -> None:
    """Two signals to the group (each reaching every job twice): the jobs leave without their
    grace, counting what they abandon."""
    server = loopback_server(latency_ms=20_000)
    sweep = tmp_path / "sweep"
    command = [
        sys.executable, "-m", "healthbench_exp", "-m", *endpoint_args(server.base_url),
        "runner.max_concurrent=2", f"cache.dir={tmp_path / 'cache'}",
        "sampling.temperature=0,0.5", "hydra/launcher=parallel", "hydra.launcher.n_jobs=2",
        f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    pytest.importorskip("hydra_plugins.hydra_joblib_launcher", reason="the `launchers` extra")
    started = start(command, tmp_path / "sweep.log", terminal=False)
    try:
        wait_for(lambda: server.stats()["in_flight"] >= 4, started.process)
        group = Delivery(signal.SIGINT, to_group=True, terminal=False)
        deliver(started, group)
        wait_for(lambda: (sweep / ".stopping").exists(), started.process)
        deliver(started, group)
        code = started.process.wait(timeout=60)  # well within the replies' 20 s
    finally:
        if started.process.poll() is None:
            started.process.kill()
        started.close()
    output = started.output()
    assert code == 130, output[-3000:]
    assert sum(abandoned_calls(sweep / job) for job in "01") >= 2, output[-3000:]

"""Shared set-ups of the tests that stop a run or a sweep with a real signal, and of those that
start a sweep to be refused: `python -m healthbench_exp` in a process of its own against a
loopback endpoint whose `/stats` outlive the runs, the paid calls read back from its records.

Used by tests/engine/test_stop_usage.py, tests/sweep/test_sweep_stops.py and
tests/cli/test_sweep_checks.py (each asserts what it asserted before; only the set-up is here);
`delivered` by the tests that deliver one signal as a terminal, nohup or SLURM would
(tests/engine/test_signal_once.py, tests/cli/test_parallel_stop.py and
tests/cli/test_bridge_kit_stops.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests import zygote
from tests.cli.test_run_lock import lines, start_run, wait_for
from tests.conftest import LoopbackServer
from tests.engine.test_resume_records import endpoint_args
from tests.signal_deliveries import REPO, Delivery, deliver, start

IN_FLIGHT = 3  # runner.max_in_flight: at most this many calls are cut short by the signal
STOPPING = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def paid_requests(usage: dict) -> int:
    """The model's and the judge's paid calls in a usage record."""
    return int(usage["model"]["requests"]) + int(usage["judge"]["requests"])


def received(server: LoopbackServer) -> int:
    """The calls the endpoint answered, once none is in flight (a call the run cut short is
    still answered: the server does not see the client go)."""
    deadline = time.monotonic() + 60
    while (stats := server.stats())["in_flight"]:
        assert time.monotonic() < deadline, stats
        time.sleep(0.05)
    return int(stats["model_requests"]) + int(stats["judge_requests"])


def rows_written(at_least: int, *paths: Path) -> Callable[[], bool]:
    """Whether each records file of `paths` (a run's examples.jsonl) has `at_least` rows yet."""
    return lambda: all(len(lines(path)) >= at_least for path in paths)


def stop_signalled(
    server: LoopbackServer,
    tmp_path: Path,
    args: list[str],
    ready: Callable[[], bool],
    signums: list[int],
    in_flight: int | None = IN_FLIGHT,
    multirun: bool = False,
) -> tuple[int, str]:
    """Start `python -m healthbench_exp [-m] <args>` on `server` (the demo's rows and prices, 2
    rows at once, at most `in_flight` calls in flight unless None, a cache of its own in
    `tmp_path`; a sweep with `multirun`), send it each of `signums` once `ready()` holds;
    return its exit status and stderr."""
    limit = [] if in_flight is None else [f"runner.max_in_flight={in_flight}"]
    process = start_run(
        *(["-m"] if multirun else []), *endpoint_args(server.base_url),
        "runner.max_concurrent=2", *limit,
        f"cache.dir={tmp_path / 'cache'}", *args,
    )  # fmt: skip
    wait_for(ready, process)
    for signum in signums:
        process.send_signal(signum)
    _out, err = process.communicate(timeout=120)
    return process.returncode, err


def delivered(
    command: list[str],
    log: Path,
    delivery: Delivery,
    ready: Callable[[], bool],
    cwd: Path = REPO,
    env: dict[str, str] | None = None,
) -> tuple[int, str]:
    """Start `command` in a session of its own (with a terminal or none, as `delivery` says;
    its output to `log`), deliver `delivery`'s signal once `ready()` holds, and wait for its
    end (killed if it outlives 120 s); return its exit code and output."""
    started = start(command, log, delivery.terminal, cwd=cwd, env=env)
    try:
        wait_for(ready, started.process)
        deliver(started, delivery)
        code = started.process.wait(timeout=120)
    finally:
        if started.process.poll() is None:
            started.process.kill()
        started.close()
    return code, started.output()


def no_key_env(*unset: str) -> dict[str, str]:
    """The environment without OpenAI's key, nor the variables `unset`."""
    return {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", *unset)}


def jobs_run(sweep_dir: Path) -> list[Path]:
    """The job directories a sweep made (none when no job started)."""
    return sorted(p for p in sweep_dir.glob("*") if p.is_dir()) if sweep_dir.exists() else []


def run_sweep(
    sweep_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`python -m healthbench_exp -m <args> hydra.sweep.dir=<sweep_dir>` to its end, with `env`
    as its whole environment (default: this one's). Not `run_cli`, which lays its `env` over
    this one's: a key `no_key_env` left out would come back from the developer's shell (and a
    job refused for want of it would run, on the real API)."""
    return zygote.run("-m", *args, f"hydra.sweep.dir={sweep_dir}", env=env)


def refused_sweep(
    sweep_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """`run_sweep`, asserting that the sweep was refused before any job: exit 2, no job run."""
    result = run_sweep(sweep_dir, *args, env=env)
    assert result.returncode == 2, result.stderr
    assert jobs_run(sweep_dir) == [], result.stderr
    return result

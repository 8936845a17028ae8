"""No process outlives the harness (issue 27, item 4): the built-in endpoint, a served model's
server (with its process group) and the test suite's own loopback servers die with the process
that started them, however it ends, `kill -9` included.

Each test starts the real thing in a subprocess, `kill -9`s that subprocess, and checks that
what it started is gone within a few seconds (Linux: `/proc` lists the processes).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import zygote
from tests.e2e.test_e2e import REPO
from tests.engine.test_serve import (
    LIGHT,
    alive,
    listening,
    requests_in_flight,
    server_lives,
    stand_in_env,
    wait_for,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
GONE_WITHIN_S = 5.0


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def command_line(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode()
    except OSError:
        return ""


def child_running(parent: int, marker: str) -> int:
    """The pid of `parent`'s child whose command line holds `marker` (waits for it)."""
    found: list[int] = []

    def started() -> bool:
        found[:] = [p for p in children(parent) if marker in command_line(p)]
        return bool(found)

    wait_for(started, 60, f"a child running {marker}")
    return found[0]


def assert_dies(pid: int, what: str, within: float = GONE_WITHIN_S) -> None:
    deadline = time.monotonic() + within
    while alive(pid):
        assert time.monotonic() < deadline, f"{what} (pid {pid}) outlived its parent's kill -9"
        time.sleep(0.1)


def kill_9(process: subprocess.Popen | zygote.ForkedRun) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=10)


def harness(
    run_dir: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen | zygote.ForkedRun:
    """`python -m healthbench_exp` in its own process (forked: tests/zygote.py)."""
    return zygote.spawn(*LIGHT, *args, f"hydra.run.dir={run_dir}", env=env)


def test_kill_9_of_a_demo_run_ends_its_built_in_endpoint(tmp_path) -> None:
    run = harness(tmp_path / "run", "offline_server.latency_ms=60000")  # no reply before the kill
    try:
        endpoint = child_running(run.pid, "healthbench_exp.offline_server")
        log = tmp_path / "run" / "healthbench.log"
        ready = "built-in offline endpoint at"  # it listens: the run read its address
        wait_for(lambda: log.exists() and ready in log.read_text(), 60, "the endpoint")
        # requests in flight, held for their latency
        wait_for(lambda: requests_in_flight(log) > 0, 60, "requests held by the endpoint")
        assert alive(endpoint) and run.poll() is None
        kill_9(run)
        assert_dies(endpoint, "the built-in endpoint")
    finally:
        run.kill()


def test_kill_9_of_a_run_serving_its_model_ends_the_server_and_its_group(tmp_path) -> None:
    run_dir = tmp_path / "run"
    run = harness(
        run_dir, "model=vllm", "model.name=org/slow", "offline_server.latency_ms=60000",
        env=stand_in_env(),
    )  # fmt: skip
    try:
        log = run_dir / "healthbench.log"
        wait_for(lambda: log.exists() and "served at" in log.read_text(), 60, "the served model")
        (life,) = server_lives(run_dir / "vllm.log")
        guard = child_running(run.pid, "healthbench_exp.core.lifeline")
        assert alive(life.pid) and listening(life.port)
        kill_9(run)
        assert_dies(life.pid, "the served model's server")
        assert_dies(guard, "the server's guard")
        assert not listening(life.port)
    finally:
        run.kill()


def start_holder(script: str) -> subprocess.Popen[str]:
    """A Python process running `script`, which prints the pids it started on its first line."""
    return subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO
    )


def test_kill_9_of_a_test_process_ends_its_loopback_servers(tmp_path) -> None:
    """What the suite's fixtures do (`tests/conftest.py`: `ServerProcess`), in a process that is
    then killed as a pytest run can be."""
    script = (
        "from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args\n"
        "import time\n"
        "s = ServerProcess(server_args(latency_ms=60000)).__enter__()\n"
        "print(s.process.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    holder = start_holder(script)
    try:
        assert holder.stdout is not None
        server = int(holder.stdout.readline())
        assert alive(server)
        kill_9(holder)
        assert_dies(server, "a loopback server of the tests")
    finally:
        holder.kill()


def test_the_guard_alone_stops_a_group_whose_harness_died(tmp_path) -> None:
    """The portable watch, without the parent-death signal: a plain `sleep` in a session of its
    own (no prctl) is stopped by its guard once the process that started both is killed."""
    script = (
        "import subprocess, sys, time\n"
        "from healthbench_exp.core.lifeline import guard_command\n"
        "s = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        "g = subprocess.Popen(guard_command(s.pid, grace=1.0), start_new_session=True)\n"
        "print(s.pid, g.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    holder = start_holder(script)
    started: list[int] = []
    try:
        assert holder.stdout is not None
        started += map(int, holder.stdout.readline().split())
        sleeper, guard = started
        time.sleep(0.5)
        assert alive(sleeper) and alive(guard)
        kill_9(holder)
        assert_dies(sleeper, "the guarded process")
        assert_dies(guard, "the guard")
    finally:
        holder.kill()
        for pid in started:  # only if the test failed
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# a run's event loop handles SIGTERM (as `engine.stops.interruptible` does); a child is spawned as
# the W&B worker and the built-in endpoint are; the child signals itself before its exec, as a
# SIGTERM to the whole group does when it lands while the child is forked; the parent signals
# itself inside the hold too. The loop must see SIGTERM once: its own.
FORKED_UNDER_A_SIGNAL = """
import asyncio, os, signal, subprocess, sys
from healthbench_exp.core.stop_signals import child_preexec, signals_held_at_fork
HOLD = sys.argv[1] == "held"
seen = []

async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, seen.append, "TERM")
    ignore = child_preexec((signal.SIGTERM,), die_with_parent=False)

    def preexec():
        os.kill(os.getpid(), signal.SIGTERM)  # in the child, between fork and exec
        ignore()

    with signals_held_at_fork() if HOLD else open(os.devnull):
        os.kill(os.getpid(), signal.SIGTERM)  # the parent's own, delivered once the fork is done
        child = subprocess.Popen([sys.executable, "-c", "pass"], preexec_fn=preexec)
    assert child.wait() == 0  # the child ignored it
    for _ in range(20):  # the loop reads its wakeup fd in its next passes
        await asyncio.sleep(0)
    print(len(seen))

asyncio.run(main())
"""


@pytest.mark.parametrize("hold", ["held", "not held"])
def test_a_signal_while_a_child_is_forked_reaches_the_run_once(hold: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", FORKED_UNDER_A_SIGNAL, hold],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    # held (as the harness forks): once; not held: the child's copy of the parent's handler
    # writes the signal to the parent's wakeup fd too, and the run sees it twice
    assert int(result.stdout) == (1 if hold == "held" else 2), result.stdout

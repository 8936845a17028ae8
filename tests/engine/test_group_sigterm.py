"""A SIGTERM to the run's whole process group (`scancel`, `kill -TERM -PGID`) reaches the
built-in server too: it outlives that signal, so the run's requests in flight are answered
during the grace (`runner.stop_grace_s`), and the run stops it before it exits (issue 50,
item 4). Before, the server died at once and those requests failed.

End to end: `python -m healthbench_exp` in a session of its own, a real SIGTERM to the group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_run_lock import lines, wait_for
from tests.engine.test_stop_in_flight import abandoned, group_members, invocations

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
REPO = Path(__file__).resolve().parents[2]


def test_a_sigterm_to_the_whole_group_lets_the_builtin_server_answer_what_is_in_flight(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    process = subprocess.Popen(
        # with W&B (offline), as the demo runs: the run forks its W&B worker as its first row is
        # written, when this test signals; a signal landing between that fork and its exec
        # reached the run's event loop twice (the child's copy of the loop's wakeup fd), and the
        # second ended the grace (4 of 8 runs abandoned their 2 calls): the fork now holds the
        # stopping signals (`core.lifeline.signals_held_at_fork`)
        [sys.executable, "-m", "healthbench_exp", "experiment=demo", "runner.progress=false",
         "runner.max_concurrent=2", "offline_server.latency_ms=1500",
         f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={run_dir}"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own group, as a Slurm job's processes have
    )  # fmt: skip
    pgid = os.getpgid(process.pid)
    wait_for(lambda: len(lines(run_dir / "examples.jsonl")) >= 1, process)
    assert len(group_members(pgid)) > 1  # the built-in server runs
    os.killpg(pgid, signal.SIGTERM)  # what `scancel` sends
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 143, err
    assert "Traceback" not in err
    (cut,) = invocations(run_dir)
    assert abandoned(cut["usage"]) == 0, cut["usage"]  # the server answered them
    errors = [json.loads(line).get("error") for line in lines(run_dir / "examples.jsonl")]
    # the examples not started yet are recorded as not run; none failed on its way
    assert [e for e in errors if e and not e.startswith("not run: ")] == []
    deadline = time.monotonic() + 30
    while left := group_members(pgid):  # the run stopped the server before it exited
        assert time.monotonic() < deadline, f"left in the group: {left}"
        time.sleep(0.05)

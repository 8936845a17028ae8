"""The pass-on rule (`core.stop_signals`): a child's stop level is max(its own signals, its
parent's level), so one signal that reaches a job directly and through its parent counts once,
in either order, and a second real signal still raises the level; and a child started by
`start_child` under a signal to the group reaches the parent's handler once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from healthbench_exp.core.stop_signals import (
    LEAVE,
    STOP_LEVEL_ENV,
    Stop,
    StopCount,
    level_env,
    pass_on,
    read_level,
)

REPO = Path(__file__).resolve().parents[2]


def test_a_signal_delivered_directly_and_through_the_parent_counts_once(tmp_path: Path) -> None:
    parent = tmp_path / "level"
    child = StopCount(parent)
    assert child.delivered(signal.SIGINT) == Stop(1, signal.SIGINT)  # the group's copy
    pass_on(parent, 1, signal.SIGINT)  # the parent's
    assert child.noticed() is None  # the same signal: no rise
    assert child.delivered(signal.SIGINT) == Stop(LEAVE, signal.SIGINT)  # a second: leave


def test_the_parents_level_first_then_the_direct_copy_counts_once(tmp_path: Path) -> None:
    parent = tmp_path / "level"
    child = StopCount(parent)
    assert child.noticed() is None  # nothing passed on yet
    pass_on(parent, 1, signal.SIGTERM)
    assert child.noticed() == Stop(1, signal.SIGTERM)
    assert child.delivered(signal.SIGTERM) is None  # the group's copy, arriving second
    pass_on(parent, 2, signal.SIGTERM)  # a second signal to the parent alone
    assert child.noticed() == Stop(2, signal.SIGTERM)


def test_without_a_parent_each_signal_counts() -> None:
    alone = StopCount()
    assert alone.delivered(signal.SIGINT) == Stop(1, signal.SIGINT)
    assert alone.delivered(signal.SIGTERM) == Stop(2, signal.SIGINT)  # the first one's code
    alone.reset()
    assert alone.delivered(signal.SIGTERM) == Stop(1, signal.SIGTERM)


def test_the_level_file_is_read_whole_and_absent_is_zero(tmp_path: Path) -> None:
    path = tmp_path / "level"
    assert read_level(path) == (0, None)
    pass_on(path, 2, signal.SIGHUP)
    assert read_level(path) == (2, signal.SIGHUP)
    assert not list(tmp_path.glob("*.partial"))
    assert level_env(path)[STOP_LEVEL_ENV] == str(path)


# a parent whose event loop handles SIGTERM starts a child through `start_child`; the child
# signals itself before its exec, as a SIGTERM to the whole group does when it lands while the
# child is forked, and the parent signals itself during the start: the loop sees SIGTERM once
FORKED_UNDER_A_SIGNAL = """
import asyncio, os, signal, subprocess, sys
from healthbench_exp.core import stop_signals
seen = []
real_preexec = stop_signals.child_preexec

def signalled_preexec(ignoring, die_with_parent):
    preexec = real_preexec(ignoring, die_with_parent)
    def run():
        os.kill(os.getpid(), signal.SIGTERM)  # in the child, between fork and exec
        preexec()
    return run

stop_signals.child_preexec = signalled_preexec

async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, seen.append, "TERM")
    os.kill(os.getpid(), signal.SIGTERM)  # the parent's own
    child = stop_signals.start_child([sys.executable, "-c", "pass"], ignoring=[signal.SIGTERM])
    assert child.wait() == 0  # the child ignored it
    for _ in range(20):
        await asyncio.sleep(0)
    print(len(seen))

asyncio.run(main())
"""


def test_a_child_started_under_a_group_signal_lets_the_parent_see_it_once() -> None:
    result = subprocess.run(
        [sys.executable, "-c", FORKED_UNDER_A_SIGNAL],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) == 1, result.stdout

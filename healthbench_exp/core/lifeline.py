"""Processes the harness starts die with it, however it ends (`kill -9` included).

Two mechanisms, both used:

- the parent-death signal (Linux `prctl(PR_SET_PDEATHSIG)`): the kernel sends the child a
  signal the moment the process that started it dies (SIGTERM to a served model's server,
  SIGKILL to the built-in endpoint, which ignores SIGTERM: see `die_with_parent`);
- a watch of the parent (portable): the child, or a guard beside it, polls `os.getppid()` and
  acts when it is no longer the harness (an orphan is re-parented to init or a subreaper).

A Python server the harness starts (the built-in endpoint) calls `die_with_parent(pid)` first
thing: both mechanisms in its own process. A server that is another program (vLLM, llama.cpp)
gets the signal between fork and exec (`preexec_die_with_parent`, through
`core.stop_signals.start_child`), and a guard process
(`python -m healthbench_exp.core.lifeline --parent P --group G`) that stops the server's whole
process group (its workers included) when the harness is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

from healthbench_exp.core.run_end import Exit

PR_SET_PDEATHSIG = 1  # prctl(2): a signal for the child when its parent dies
WATCH_S = 0.25  # between two looks at the parent
# a guard's SIGTERM to the group, then this long, then SIGKILL: the harness is gone, nobody
# waits for a graceful end (a server finishing a generation nobody will read)
GRACE_S = 2.0


def _libc_prctl() -> Callable[..., int] | None:
    """libc's prctl(2) (Linux; else None), looked up once: a child calls it between fork and
    exec, where loading a library could deadlock."""
    if sys.platform != "linux":
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _libc_prctl()


def has_death_signal() -> bool:
    """Whether this platform has the parent-death signal (Linux)."""
    return _PRCTL is not None


def preexec_die_with_parent() -> None:  # pragma: no cover - in the child between fork and exec
    """For `Popen(preexec_fn=...)`: the child gets SIGTERM when the harness dies."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGTERM)


def watch_parent(parent: int, on_gone: Callable[[], None], every: float = WATCH_S) -> None:
    """Call `on_gone` (in a daemon thread) once this process's parent is no longer `parent`."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        on_gone()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def die_with_parent(parent: int) -> None:
    """This process ends when `parent` does: the parent-death signal (SIGKILL: the process may
    ignore SIGTERM, as the built-in endpoint does, to outlive a SIGTERM to its group), and a
    watch of the parent that exits the process (for a parent already gone too)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)
    watch_parent(parent, lambda: os._exit(Exit.ERROR))


def group_alive(group: int) -> bool:
    """Whether any process of the process group `group` still exists."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's group of that id
        return True
    return True


def stop_group(group: int, grace: float = GRACE_S) -> None:
    """SIGTERM to the process group, SIGKILL if any of it is left after `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while group_alive(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def guard(parent: int, group: int, grace: float = GRACE_S, every: float = WATCH_S) -> None:
    """Stop the process group `group` once this process's parent is not `parent`; return when
    the group is gone by itself (the harness stopped it)."""
    while group_alive(group):
        if os.getppid() != parent:
            stop_group(group, grace)
            return
        time.sleep(every)


def guard_command(group: int, grace: float = GRACE_S) -> list[str]:
    """The command line of a guard for `group`, whose parent is this process."""
    return [
        sys.executable, "-m", "healthbench_exp.core.lifeline",
        f"--parent={os.getpid()}", f"--group={group}", f"--grace={grace}",
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Stop a process group when its harness dies.")
    parser.add_argument("--parent", type=int, required=True, help="the harness's pid")
    parser.add_argument("--group", type=int, required=True, help="the process group to stop")
    parser.add_argument("--grace", type=float, default=GRACE_S, help="SIGTERM, then SIGKILL")
    args = parser.parse_args(argv)
    # the harness handles Ctrl-C and a closed terminal's SIGHUP, and stops us
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):  # not on Windows
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    guard(args.parent, args.group, args.grace)


if __name__ == "__main__":
    main()

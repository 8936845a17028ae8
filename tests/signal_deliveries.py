"""One stopping signal delivered every way a user's signal reaches the harness: SIGINT or SIGTERM,
to the whole process group (a terminal's Ctrl-C, `kill -INT/-TERM -PGID`, SLURM's scancel) or
to the main process alone, with a controlling terminal (a pty whose foreground group the
harness is: its Ctrl-C is the byte ^C written to the terminal) or without one (a session of its
own, as under nohup, CI or SLURM).

Used by the tests that check a signal is counted once wherever it lands
(tests/engine/test_signal_once.py, tests/cli/test_parallel_stop.py,
tests/cli/test_bridge_kit_stops.py): each starts `python -m ...` through `start`, waits for
its calls to be in flight, `deliver`s one signal and reads what every job recorded.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import termios
from dataclasses import dataclass
from pathlib import Path

from tests.cli.test_run_lock import lines

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Delivery:
    """How one stopping signal reaches the harness."""

    signum: int
    to_group: bool  # the whole process group; else the main process alone
    terminal: bool  # the harness has a controlling terminal (and is its foreground group)

    @property
    def name(self) -> str:
        where = "group" if self.to_group else "main"
        return f"{signal.Signals(self.signum).name}-{where}-{'tty' if self.terminal else 'notty'}"


DELIVERIES = [
    Delivery(signum, to_group, terminal)
    for signum in (signal.SIGINT, signal.SIGTERM)
    for to_group in (True, False)
    for terminal in (True, False)
]


@dataclass
class Started:
    """A harness started in a session of its own; `terminal` is the pty's master, if any."""

    process: subprocess.Popen[bytes]
    terminal: int | None
    log: Path  # its stdout and stderr

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        if self.terminal is not None:
            os.close(self.terminal)
            self.terminal = None


def _take_the_terminal() -> None:  # pragma: no cover - in the child between fork and exec
    """The child's stdin (the pty's slave) becomes its controlling terminal, its group the
    terminal's foreground group (after `start_new_session`'s setsid)."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def start(command: list[str], log: Path, terminal: bool, cwd: Path = REPO, env=None) -> Started:
    """`command` in a session of its own (its own process group), with a pty as its controlling
    terminal if `terminal`, its output to `log`."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    master: int | None = None
    stdin: int = subprocess.DEVNULL
    if terminal:
        master, slave = os.openpty()
        stdin = slave
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=cwd, env=environment, stdin=stdin, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_take_the_terminal if terminal else None,
        )  # fmt: skip
    if terminal:
        os.close(stdin)
    return Started(process, master, log)


def deliver(started: Started, delivery: Delivery) -> None:
    """Send `delivery`'s signal: a Ctrl-C typed at the terminal for SIGINT to the group with a
    terminal, else `kill` to the group or to the main process."""
    pid = started.process.pid
    if delivery.to_group and delivery.terminal and delivery.signum == signal.SIGINT:
        assert started.terminal is not None
        os.write(started.terminal, b"\x03")  # the terminal sends SIGINT to its foreground group
    elif delivery.to_group:
        os.killpg(pid, delivery.signum)
    else:
        os.kill(pid, delivery.signum)


def abandoned_calls(run_dir: Path) -> int:
    """The calls the run's invocations abandoned in flight (none answered within the grace
    is left out: each counts there)."""
    total = 0
    for line in lines(run_dir / "invocations.jsonl"):
        usage = json.loads(line)["usage"]
        total += sum(usage[role].get("abandoned_in_flight", 0) for role in ("model", "judge"))
    return total


def status(run_dir: Path) -> str:
    return str(json.loads((run_dir / "status.json").read_text())["status"])

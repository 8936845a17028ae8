"""The bridge kit's runs, one model after another: each the main command in a child process,
waited for to its end, whatever stops it.

A stop reaches a run once, and the run ends as the main command ends it (its results written,
`status.json` saying `interrupted` or `partial`, the command that finishes it): a Ctrl-C or a
closed terminal is delivered by the terminal to the kit and the run alike (one foreground
process group), so the kit only waits; a SIGTERM (or SIGUSR2, SLURM's warning), or a SIGINT /
SIGHUP sent to the kit alone (no terminal of its own in the foreground), is passed on to the
run. The kit then says which run stopped, how to finish it, and the command of each model's run
not started.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from healthbench_exp.core.run_end import Status

# signals a terminal sends its whole foreground process group (the run gets them itself)
FROM_THE_TERMINAL = (signal.SIGINT, signal.SIGHUP)
STOPPING = (signal.SIGINT, signal.SIGHUP, signal.SIGTERM) + (
    (signal.SIGUSR2,) if hasattr(signal, "SIGUSR2") else ()
)
MAIN_COMMAND = (sys.executable, "-m", "healthbench_exp")


def terminal_delivers_to_the_run() -> bool:
    """Whether this process's group is the foreground group of its terminal: the terminal's
    Ctrl-C and hang-up then reach the run (the same group) without the kit."""
    try:
        tty = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:  # no controlling terminal
        return False
    try:
        return os.tcgetpgrp(tty) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(tty)


@contextlib.contextmanager
def _passed_on(child: subprocess.Popen[bytes]) -> Iterator[list[int]]:
    """Within, a stopping signal does not stop the kit: it is passed on to `child` unless the
    terminal delivered it there too; the signals received are listed."""
    received: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if signum not in FROM_THE_TERMINAL or not terminal_delivers_to_the_run():
            with contextlib.suppress(ProcessLookupError):
                child.send_signal(signum)

    previous = {s: signal.signal(s, on_signal) for s in STOPPING}
    try:
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_to_its_end(arguments: Sequence[str]) -> tuple[int, list[int]]:
    """`python -m healthbench_exp <arguments>` in a child process, waited for to its end
    (never killed by the kit); its exit code, and the stopping signals the kit received."""
    child = subprocess.Popen([*MAIN_COMMAND, *arguments])
    with _passed_on(child) as received:
        code = child.wait()  # PEP 475: resumed after each handler
    return code, received


def _status(run_dir: Path) -> str | None:
    try:
        status = json.loads((run_dir / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(status.get("status")) if isinstance(status, dict) else None


def stopped_lines(
    label: str,
    code: int,
    signals: Sequence[int],
    run_dir: Path,
    not_started: Sequence[tuple[str, Sequence[str]]],
) -> list[str]:
    """What the kit says when `label`'s run did not finish: its exit code (and the signal that
    stopped it), the command that finishes it (a run that started: its status.json), and the
    command of each model's run not started."""
    why = f" after {signal.Signals(signals[0]).name}" if signals else ""
    status = _status(run_dir)
    lines = [
        f"bridge kit stopped: {label}'s run ended{why} with exit code {code}"
        + (f" ({status})" if status else "")
    ]
    if status not in (None, Status.COMPLETED, Status.DRY_RUN):
        lines.append(f"  finish it: python -m healthbench_exp resume={run_dir}")
    for other, arguments in not_started:
        lines.append(f"  not started, {other}: python -m healthbench_exp {shlex.join(arguments)}")
    return lines

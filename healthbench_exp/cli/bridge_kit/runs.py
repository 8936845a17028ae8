"""The bridge kit's runs, one model after another: each the main command in a child process,
waited for to its end, whatever stops it.

A stop reaches a run once, and the run ends as the main command ends it (its results written,
`status.json` saying `interrupted` or `partial`, the command that finishes it). The kit passes
on its stop level (`core.stop_signals`' one rule), never a raw signal: each stopping signal the
kit receives raises its level, which it writes to a file the run finds in its environment; the
run's level is max(its own signals, the kit's), so a Ctrl-C at a terminal, a `kill -TERM
-PGID` (SLURM's scancel) or a signal under nohup reaches the run once, whether it landed on the
kit, on the run or on both. The kit then says which run stopped, how to finish it, and the
command of each model's run not started.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import signal
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType

from healthbench_exp.core.run_end import Status
from healthbench_exp.core.stop_signals import (
    STOP_COUNT,
    STOPPING_SIGNALS,
    level_env,
    pass_on,
    start_child,
)

MAIN_COMMAND = (sys.executable, "-m", "healthbench_exp")
LEVEL_FILE = "stop_level"  # in a folder of the kit's own for each run


@contextlib.contextmanager
def _passed_on(level_file: Path) -> Iterator[list[int]]:
    """Within, a stopping signal does not stop the kit: when it raises the kit's stop level,
    the level is passed on through `level_file` (the run reads it); the signals that raised
    the level are listed."""
    received: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop = STOP_COUNT.delivered(signum)
        if stop is not None:
            received.append(signum)
            pass_on(level_file, stop.level, stop.signum)

    previous = {s: signal.signal(s, on_signal) for s in STOPPING_SIGNALS}
    try:
        yield received
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_to_its_end(arguments: Sequence[str]) -> tuple[int, list[int]]:
    """`python -m healthbench_exp <arguments>` in a child process, waited for to its end
    (never killed by the kit); its exit code, and the stopping signals the kit received."""
    with tempfile.TemporaryDirectory(prefix="healthbench-kit-") as folder:
        level_file = Path(folder) / LEVEL_FILE
        child = start_child([*MAIN_COMMAND, *arguments], env=level_env(level_file))
        with _passed_on(level_file) as received:
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

"""A stopping signal whose RunInterrupted Python dropped (it was raised while a finalizer ran:
"Exception ignored in ...") still stops the run: the event loop's main task does not start.
Seen under SLURM, where `scancel --signal=USR2` landed in a weakref callback during start-up
and the job ran on to `failed` instead of `interrupted`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import weakref

import pytest

from healthbench_exp.engine.stops import RunInterrupted, interruptible, signals_interrupt


class Owner:
    pass


def signal_inside_a_finalizer() -> None:
    """SIGUSR2 to this process from a weakref finalizer, where Python drops the exception its
    handler raises."""
    owner = Owner()
    weakref.finalize(owner, os.kill, os.getpid(), signal.SIGUSR2)
    del owner  # the finalizer runs now, the handler inside it


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped one
def test_a_signal_lost_in_a_finalizer_stops_the_run_before_it_starts() -> None:
    started: list[bool] = []

    async def the_run() -> str:
        started.append(True)
        return "done"

    with signals_interrupt():
        signal_inside_a_finalizer()  # no exception reaches here: "Exception ignored in ..."
        with pytest.raises(RunInterrupted, match="SIGUSR2"):
            asyncio.run(interruptible(the_run()))
    assert started == []
    with signals_interrupt():  # a new scope: nothing left over from the last one
        assert asyncio.run(interruptible(the_run())) == "done"
    assert started == [True]


def test_a_delivered_signal_is_raised_where_it_lands() -> None:
    with signals_interrupt(), pytest.raises(RunInterrupted, match="SIGUSR2"):
        os.kill(os.getpid(), signal.SIGUSR2)
        for _ in range(1000):  # the handler runs between two instructions
            pass


def test_a_signal_lost_in_a_finalizer_prints_no_exception_ignored(tmp_path) -> None:
    """The dropped RunInterrupted is not printed ("Exception ignored in: <WeakSet ...>" on a
    user's Ctrl-C); the run still ends interrupted. In a process of its own: pytest has its own
    unraisable hook."""
    script = tmp_path / "lost.py"
    script.write_text(
        "import asyncio, os, signal, weakref\n"
        "from healthbench_exp.engine.stops import (\n"
        "    RunInterrupted, interruptible, signals_interrupt)\n"
        "class Owner: pass\n"
        "async def the_run(): return 'done'\n"
        "with signals_interrupt():\n"
        "    owner = Owner()\n"
        "    weakref.finalize(owner, os.kill, os.getpid(), signal.SIGUSR2)\n"
        "    del owner\n"
        "    try:\n"
        "        asyncio.run(interruptible(the_run()))\n"
        "    except RunInterrupted as stopped:\n"
        "        print('stopped:', stopped)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip()
        == "stopped: interrupted by SIGUSR2 (SLURM's warning before the job's time limit)"
    )
    assert "Exception ignored" not in done.stderr and "RunInterrupted" not in done.stderr

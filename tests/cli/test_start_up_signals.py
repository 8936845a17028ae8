"""A stopping signal at any moment of start-up (the imports, Hydra composing the config, the
argument checks) ends `python -m healthbench_exp` with one line and 128 + its number, never a
traceback.

End to end: a fresh interpreter (not the tests' forked one: its imports are what is timed), the
signal sent at several moments of the first second and a half after the interpreter's own start
(`STARTED`: it prints a line, then runs the module as `-m` does). A signal before that line meets
the interpreter, not the program (on a loaded machine its start alone took over 0.8 s: SIGHUP
then killed it, and a SIGINT in its site imports was lost).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from healthbench_exp.core.stop_signals import STOPPING_SIGNALS

REPO = Path(__file__).resolve().parents[2]
# moments after the start (s): the imports (about 1.3 s unloaded), then the config's composition
MOMENTS_S = (0.4, 0.8, 1.2)
# `python -m healthbench_exp`, after a line saying that the interpreter has started
STARTED = (
    "import runpy, sys; print('started', flush=True); "
    "runpy.run_module('healthbench_exp', run_name='__main__', alter_sys=True)"
)


def as_a_terminal_starts_it() -> None:
    """In the child: the stopping signals at their default dispositions and not held, as a
    shell starts a command (not as this test process may hold them)."""
    for signum in STOPPING_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING_SIGNALS)


@pytest.mark.parametrize(
    ("signum", "why"), [(signal.SIGINT, " (Ctrl-C)"), (signal.SIGTERM, ""), (signal.SIGHUP, "")]
)
def test_a_signal_during_start_up_is_one_line_and_its_exit_code(
    signum: int, why: str, tmp_path: Path
) -> None:
    name = signal.Signals(signum).name
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for moment in MOMENTS_S:
        run_dir = tmp_path / f"run-{moment}"
        process = subprocess.Popen(
            [sys.executable, "-c", STARTED, "experiment=demo", "wandb=disabled",
             "runner.progress=false", f"cache.dir={tmp_path / 'cache'}",
             f"hydra.run.dir={run_dir}"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=as_a_terminal_starts_it,
        )  # fmt: skip
        assert process.stdout is not None and process.stdout.readline() == "started\n"
        time.sleep(moment)
        process.send_signal(signum)
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 128 + signum, (moment, err)
        assert "Traceback" not in err and "Exception ignored" not in err, (moment, err)
        told = [line for line in err.splitlines() if line.startswith("interrupted by")]
        assert len(told) == 1, (moment, err)
        assert told[0].startswith(f"interrupted by {name}{why}"), (moment, err)
        assert err.strip().splitlines()[-1] == told[0] or "finish with" in err, (moment, err)

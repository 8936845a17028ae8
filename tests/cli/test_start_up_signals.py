"""A stopping signal at any moment of start-up (the imports, Hydra composing the config, the
argument checks) ends `python -m healthbench_exp` with one line and 128 + its number, never a
traceback.

End to end: a fresh interpreter (not the tests' forked one: its imports are what is timed), the
signal sent at several moments of its first second and a half (the interpreter's own start,
before the program's first line, takes about 0.1 s: the first moment leaves it time).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# moments after the start (s): the imports (about 1.3 s unloaded), then the config's composition
MOMENTS_S = (0.4, 0.8, 1.2)


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
            [sys.executable, "-m", "healthbench_exp", "experiment=demo", "wandb=disabled",
             "runner.progress=false", f"cache.dir={tmp_path / 'cache'}",
             f"hydra.run.dir={run_dir}"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(moment)
        process.send_signal(signum)
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 128 + signum, (moment, err)
        assert "Traceback" not in err and "Exception ignored" not in err, (moment, err)
        told = [line for line in err.splitlines() if line.startswith("interrupted by")]
        assert len(told) == 1, (moment, err)
        assert told[0].startswith(f"interrupted by {name}{why}"), (moment, err)
        assert err.strip().splitlines()[-1] == told[0] or "finish with" in err, (moment, err)

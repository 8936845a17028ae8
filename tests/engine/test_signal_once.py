"""One stopping signal to a single run counts once, wherever it lands: to the whole group (a
terminal's Ctrl-C, `kill -INT/-TERM -PGID`: it reaches the run and its helpers, the W&B worker
and the built-in endpoint, which leave it to the run) or to the run alone, with a terminal or
without. The run gets its grace: it abandons none of its calls in flight, ends `interrupted`,
and its last line is the resume command.

End to end: `python -m healthbench_exp` (W&B offline, the built-in endpoint with replies of
1.5 s) in a session of its own, a pty as its terminal or none, a real signal.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli.test_run_lock import lines
from tests.output.test_tracking import wandb_env
from tests.signal_deliveries import DELIVERIES, Delivery, abandoned_calls, status
from tests.signal_runs import delivered

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a pty, process groups")
QUICK = {"SIGINT-group-tty"}  # the terminal's Ctrl-C; the others with the slow tests


@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(d, id=d.name, marks=() if d.name in QUICK else pytest.mark.slow)
        for d in DELIVERIES
    ],
)
def test_one_signal_to_a_run_gives_it_its_grace(tmp_path: Path, delivery: Delivery) -> None:
    run_dir = tmp_path / "run"
    code, output = delivered(
        [sys.executable, "-m", "healthbench_exp", "experiment=demo", "runner.progress=false",
         "runner.max_concurrent=2", "offline_server.latency_ms=1500",
         f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={run_dir}"],
        tmp_path / "run.log", delivery, lambda: bool(lines(run_dir / "examples.jsonl")),
        env=wandb_env(tmp_path),
    )  # fmt: skip

    assert code == 128 + delivery.signum, output[-3000:]
    assert "Traceback" not in output and "abandoned in flight" not in output, output[-3000:]
    assert status(run_dir) == "interrupted"
    assert abandoned_calls(run_dir) == 0, output[-3000:]
    assert output.strip().splitlines()[-1].endswith(f"resume={run_dir}")

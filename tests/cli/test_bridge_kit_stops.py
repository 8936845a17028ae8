"""One stopping signal to the bridge kit counts once, wherever it lands: to the whole group (a
terminal's Ctrl-C, `kill -TERM -PGID` as SLURM's scancel sends it: the model's run gets it
directly AND through the kit) or to the kit alone, with a terminal or without (nohup, CI,
SLURM). The run gets its grace: it abandons none of its calls in flight, ends `interrupted`,
and the kit's last lines say how to finish it.

End to end: `python -m healthbench_exp.bridge_kit` in a session of its own (a pty as its
terminal, or none), a real signal, the built-in endpoint with replies of 1.5 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli.test_bridge_kit import KIT
from tests.cli.test_run_lock import lines
from tests.e2e.bridge_runs import write_data
from tests.signal_deliveries import DELIVERIES, Delivery, abandoned_calls, status
from tests.signal_runs import delivered

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a pty, process groups")
# the ways whose stop was lost before (the kit passed SIGTERM on to a run that had it already):
# in the quick suite; the others with the slow tests
QUICK = {"SIGTERM-group-notty", "SIGINT-group-notty"}


@pytest.mark.parametrize(
    "delivery",
    [
        pytest.param(d, id=d.name, marks=() if d.name in QUICK else pytest.mark.slow)
        for d in DELIVERIES
    ],
)
def test_one_signal_to_the_kit_gives_its_run_the_grace(tmp_path: Path, delivery: Delivery) -> None:
    data = write_data(tmp_path, "pool", 40)
    out = tmp_path / "kit"
    source = out / "source_offline"
    command = [
        sys.executable, "-m", "healthbench_exp.bridge_kit", *KIT, "models=offline",
        f"dataset.path={data}", "examples=20", f"out={out}", "offline_server.latency_ms=1500",
        "runner.max_concurrent=2",
    ]  # fmt: skip
    # ready once the run has recorded a row: its next calls are in flight (each takes 1.5 s)
    code, output = delivered(
        command, tmp_path / "kit.log", delivery, lambda: bool(lines(source / "examples.jsonl")),
        cwd=tmp_path, env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip

    assert code == 128 + delivery.signum, output[-3000:]
    assert "Traceback" not in output and "KeyboardInterrupt" not in output
    assert "abandoned in flight" not in output, output[-3000:]
    assert status(source) == "interrupted", output[-3000:]
    assert abandoned_calls(source) == 0, output[-3000:]
    assert (
        output.strip().splitlines()[-1] == f"  finish it: python -m healthbench_exp resume={source}"
    )

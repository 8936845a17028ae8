"""The estimated cost of requests a stop abandoned in flight shows where the run's cost shows
(issue 50, item 1): the run's report.html header, its W&B run summary, and a comparison's totals
(sweep_summary.json, .md and report.html: summed over the jobs, apart from the measured cost,
marked estimated); absent where nothing was abandoned.

End to end: a real run left at a Ctrl-C without grace while model requests are held by a
loopback endpoint in a process of its own, then resumed to its end (its summary, report and
offline W&B run, read back from its file, are the whole run's), then `python -m
healthbench_exp.aggregate` over it, a copy of it and a clean run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

from tests import zygote
from tests.e2e.test_e2e import run_cli
from tests.engine.test_resume_records import endpoint_args
from tests.engine.test_stop_in_flight import started
from tests.output.test_tracking import offline_runs, wandb_env
from tests.wandb_log import read_run


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def test_abandoned_requests_show_in_the_report_wandb_and_a_comparisons_totals(
    loopback_server, tmp_path: Path
) -> None:
    server = loopback_server(latency_ms=1000)
    cut, env = tmp_path / "cut", {**os.environ, **wandb_env(tmp_path)}
    process = zygote.spawn(
        *endpoint_args(server.base_url), "runner.max_concurrent=2", "runner.stop_grace_s=0",
        "wandb=offline", f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={cut}", env=env,
    )  # fmt: skip
    started(server, 2)
    process.send_signal(signal.SIGINT)  # no grace: the requests in flight are abandoned
    _out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    # its report and W&B run: the whole run's
    resumed = run_cli(f"resume={cut}", env=wandb_env(tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    usage = summary(cut)["usage"]
    count, estimate = usage["model"]["abandoned_in_flight"], usage["abandoned_cost_usd"]
    assert count >= 2 and estimate > 0
    abandoned = f"about ${estimate:.4f} for {count} requests abandoned in flight (estimated"

    assert abandoned in (cut / "report.html").read_text(encoding="utf-8")
    logged = read_run(offline_runs(tmp_path / "wandb_dir")[-1]).summary
    assert logged["cost/abandoned_estimated_usd"] == pytest.approx(estimate)
    assert logged["usage/model/abandoned_in_flight"] == count
    assert "usage/judge/abandoned_in_flight" not in logged  # none of the judge's

    clean = tmp_path / "clean"
    done = run_cli("experiment=demo", f"hydra.run.dir={clean}", f"cache.dir={tmp_path / 'c2'}")
    assert done.returncode == 0, done.stderr
    assert "abandoned in flight" not in (clean / "report.html").read_text(encoding="utf-8")
    assert "abandoned_cost_usd" not in summary(clean)["usage"]

    shutil.copytree(cut, tmp_path / "cut_again")
    out = tmp_path / "comparison"
    inputs = [str(cut), str(tmp_path / "cut_again"), str(clean)]
    aggregated = zygote.run(*inputs, "--out", str(out), module="healthbench_exp.aggregate")
    compared = json.loads((out / "sweep_summary.json").read_text(encoding="utf-8"))
    assert compared["abandoned_in_flight"] == 2 * count, aggregated.stderr
    assert compared["abandoned_cost_usd"] == pytest.approx(2 * estimate)
    measured = [j["cost_usd"] for j in compared["jobs"]]
    assert compared["cost_usd"] == pytest.approx(sum(measured))  # the estimate stays apart
    total = f"about ${2 * estimate:.4f} for {2 * count} requests abandoned in flight (estimated"
    assert total in (out / "sweep_summary.md").read_text(encoding="utf-8")
    assert total in (out / "report.html").read_text(encoding="utf-8")

    alone = tmp_path / "clean_only"
    zygote.run(str(clean), "--out", str(alone), module="healthbench_exp.aggregate")
    assert "abandoned_in_flight" not in json.loads((alone / "sweep_summary.json").read_text())
    assert "abandoned in flight" not in (alone / "sweep_summary.md").read_text(encoding="utf-8")

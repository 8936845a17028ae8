"""Estimates that learn: from the cache's history and from a pilot, on the built-in endpoint
with reply and verdict lengths unlike any configured expectation, against the real run's
measured cost (summary.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from healthbench_exp import dry_run, load_config, run
from healthbench_exp.model.cache.admin import HISTORY_MIN_REPLIES
from tests.e2e.test_e2e import run_cli

# replies of about 300 tokens and verdicts of about 150: the demo's options expect 55 and 33,
# the shipped defaults 600 and 80
LENGTHS = ["offline_server.reply_tokens=300", "offline_server.verdict_tokens=150"]
TARGET = 0.15  # the estimate lands within 15% of the measured cost (docs/costs.md)


def config(cache: Path, *overrides: str):  # type: ignore[no-untyped-def]
    return load_config(
        ["experiment=demo", "wandb.mode=disabled", f"cache.dir={cache}", *LENGTHS, *overrides]
    )[0]


def test_history_estimate_lands_within_15_percent_of_the_measured_cost(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # history: 16 of the 24 examples, twice: 32 replies of this model and settings
    first = config(cache, "sampling.num_examples=16", "sampling.seed=1")
    first.sampling.rollouts_per_example = 2
    run(first, tmp_path / "history")
    job = config(cache)
    estimate = dry_run(job, tmp_path / "estimate")
    assert estimate["rates"]["model"]["source"] == "history"
    assert estimate["rates"]["model"]["replies"] >= HISTORY_MIN_REPLIES
    assert estimate["rates"]["judge"]["source"] == "history"
    assert 0 < estimate["model"]["cached_calls"] < estimate["model"]["calls"]
    measured = run(job, tmp_path / "run")["usage"]
    assert (
        measured["model"]["requests"]
        == estimate["model"]["calls"] - (estimate["model"]["cached_calls"])
    )
    error = estimate["total_cost_usd"] / measured["total_cost_usd"] - 1
    assert abs(error) <= TARGET, (estimate["total_cost_usd"], measured["total_cost_usd"])


def test_pilot_estimate_lands_within_15_percent_and_its_calls_are_not_paid_twice(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    job = config(cache)
    blind = dry_run(job, tmp_path / "blind")  # nothing measured yet: the assumed lengths
    assert blind["rates"]["model"]["source"] == blind["rates"]["judge"]["source"] == "assumed"
    piloted = config(cache, "dry_run.pilot=6")
    estimate = dry_run(piloted, tmp_path / "estimate")
    pilot = estimate["pilot"]
    assert pilot["rows"] == 6 and pilot["paid_calls"]["model"] == 6
    assert estimate["rates"]["model"]["source"] == estimate["rates"]["judge"]["source"] == "pilot"
    interval = estimate["interval"]
    assert interval["low"] <= estimate["total_cost_usd"] <= interval["high"]
    assert interval["low"] < interval["high"] and "bootstrap" in interval["method"]
    measured = run(job, tmp_path / "run")["usage"]
    # the run pays everything but the pilot's calls, which it finds in the cache
    assert measured["model"]["requests"] == 24 - pilot["paid_calls"]["model"]
    assert measured["judge"]["requests"] == 106 - pilot["paid_calls"]["judge"]
    assert measured["model"]["cache_hits"] == pilot["paid_calls"]["model"]
    assert measured["judge"]["cache_hits"] == pilot["paid_calls"]["judge"]
    error = estimate["total_cost_usd"] / measured["total_cost_usd"] - 1
    assert abs(error) <= TARGET, (estimate["total_cost_usd"], measured["total_cost_usd"])
    # the same job estimated blind misses the whole job's cost by far more than the target
    whole = measured["total_cost_usd"] + pilot["cost_usd"]
    assert abs(blind["total_cost_usd"] / whole - 1) > 2 * TARGET


@pytest.mark.parametrize("switch", ["dry_run=true", "dry_run.pilot=2"])
def test_dry_run_switches_from_the_command_line(tmp_path: Path, switch: str) -> None:
    result = run_cli(
        "experiment=demo", switch, f"cache.dir={tmp_path / 'cache'}", f"hydra.run.dir={tmp_path}"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "dry_run"
    estimate = json.loads((tmp_path / "estimate.json").read_text())
    assert "where the figures come from" in result.stdout
    if switch == "dry_run=true":
        assert estimate["pilot"] is None and "nothing was sent" in result.stdout
    else:
        assert estimate["pilot"]["rows"] == 2 and "pilot's 2 rows were sent" in result.stdout
    assert not (tmp_path / "summary.json").exists()

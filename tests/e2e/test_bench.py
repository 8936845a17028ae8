"""The benches: each script starts, the two that only print run, and the side-by-side is fair
(the reference re-creation grades exactly as the harness does)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args
from tests.e2e.test_e2e import REPO, run_cli

pytestmark = pytest.mark.slow  # the benches grade thousands of synthetic rows: `pytest -m slow`

BENCH = REPO / "bench"


def bench_module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reference_re_creation_scores_like_the_harness(tmp_path: Path) -> None:
    throughput = bench_module("throughput")
    data = tmp_path / "rows.jsonl"
    rows = throughput.synthetic_rows(12, seed=3)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with ServerProcess(server_args(latency_ms=0)) as server:
        reference = subprocess.run(
            [sys.executable, str(BENCH / "reference_style.py"), f"--data={data}",
             f"--base-url={server.base_url}", "--threads=4", f"--out={tmp_path / 'ref.json'}"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert reference.returncode == 0, reference.stderr
        args = argparse.Namespace(
            concurrency=16, examples_in_flight=8, http_client="aiohttp", set=[]
        )
        command = throughput.harness_command(data, args, server.base_url, tmp_path / "harness")
        harness = run_cli(*command[3:], env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")})
        assert harness.returncode == 0, harness.stderr
    result = json.loads((tmp_path / "ref.json").read_text())
    summary = json.loads((tmp_path / "harness" / "summary.json").read_text())
    calls = len(rows) + sum(len(r["rubrics"]) for r in rows)
    assert result["requests"] == calls == summary["counts"]["judge_requests"] + len(rows)
    assert result["score"] == summary["metrics"]["overall_score"]  # to the last digit
    # the reference's own files: every example's HTML in the report, every criterion graded
    everything = json.loads((tmp_path / "allresults.json").read_text())
    assert len(everything["htmls"]) == len(rows)
    graded = [m["rubric_items"] for m in everything["metadata"]["example_level_metadata"]]
    assert [len(g) for g in graded] == [len(r["rubrics"]) for r in rows]


def test_throughput_times_harness_and_reference_on_one_server(tmp_path: Path) -> None:
    throughput = bench_module("throughput")
    data = tmp_path / "rows.jsonl"
    rows = throughput.synthetic_rows(10, seed=5)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    calls = len(rows) + sum(len(r["rubrics"]) for r in rows)
    args = argparse.Namespace(
        zero_latency=False, latency_ms=20.0, jitter_ms=0.0, reuse_cache=False, concurrency=16,
        examples_in_flight=8, http_client="aiohttp", set=[], requests_only=True,
    )  # fmt: skip
    with ServerProcess(server_args(latency_ms=20)) as server:
        for runner in ("harness", "reference"):
            args.runner = runner
            started = time.time()
            figures = throughput.run_once(data, args, tmp_path, server)
            stats = throughput.server_stats(server.base_url)
            assert figures["requests"] == calls == stats["requests"], runner
            # the server's busy time (what simple-evals' evaluation time is taken from)
            assert started < stats["first_request_at"] < stats["last_reply_at"] < time.time()
            assert stats["last_reply_at"] - stats["first_request_at"] >= 2 * 0.020
            assert 1 <= figures["peak_in_flight"] <= args.concurrency, runner
            assert 0 < figures["evaluation_s"] <= figures["wall_s"], runner
            assert figures["ideal_s"] == max(stats["latency_ms_total"] / 1000 / 16, 0.040)


@pytest.mark.parametrize("script", sorted(p.name for p in BENCH.glob("*.py")))
def test_every_bench_script_starts(script: str) -> None:
    """Each script's imports of the package resolve (they name modules that move) and it parses
    its arguments."""
    result = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "usage:" in result.stdout


def test_startup_and_wandb_overhead_print_their_figures(tmp_path: Path) -> None:
    """The two benches that only print run end to end on the demo and on a few synthetic rows."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    startup = subprocess.run(
        [sys.executable, str(BENCH / "startup.py"), "--repeat", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert startup.returncode == 0, startup.stderr
    assert re.search(r"^run 1: first request \d+\.\d\d s after launch$", startup.stdout, re.M)
    overhead = subprocess.run(
        [sys.executable, str(BENCH / "wandb_overhead.py"), "--n", "8", "--zero-latency",
         "--repeat", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO, env=env,
    )  # fmt: skip
    assert overhead.returncode == 0, overhead.stderr
    for mode in ("disabled", "offline"):
        assert re.search(rf"^1 +{mode} +[\d.]+ +[\d.]+ +[\d.]+ +\d+$", overhead.stdout, re.M)
    assert "median wall s: disabled" in overhead.stdout


def test_throughput_times_the_harness_of_another_checkout(tmp_path: Path) -> None:
    """`--harness-checkout DIR` runs DIR's package, not this one's: before and after a change
    on one bench and server."""
    throughput = bench_module("throughput")
    checkout = tmp_path / "before"
    package = checkout / "healthbench_exp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(
        "import sys\nsys.stderr.write('the older checkout ran')\nsys.exit(3)\n"
    )
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in throughput.synthetic_rows(2, seed=1)))
    args = argparse.Namespace(
        zero_latency=True, latency_ms=0.0, jitter_ms=0.0, reuse_cache=False, concurrency=4,
        examples_in_flight=2, http_client="aiohttp", set=[], runner="harness",
        harness_checkout=checkout,
    )  # fmt: skip
    with (
        ServerProcess(server_args(latency_ms=0)) as server,
        pytest.raises(SystemExit, match="the older checkout ran"),
    ):
        throughput.run_once(data, args, tmp_path, server)

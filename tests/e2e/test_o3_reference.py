"""The `o3` preset samples as the reference samples o3: every metric of a harness run with
`model=o3` equals the reference re-creation's with simple-evals' ResponsesSampler for o3
(`bench/reference_style.py --sampler responses`), on the same rows and the same built-in server
(whose replies hash the messages sent and whose verdicts hash the grader prompt, so a system
message sent, or shown to the grader, changes them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args
from tests.e2e.test_bench import BENCH, bench_module
from tests.e2e.test_e2e import run_cli

pytestmark = pytest.mark.slow  # runs the reference re-creation (the [bench] extra)

O3 = "o3-2025-04-16"


def harness(data: Path, base_url: str, run_dir: Path, *extra: str) -> dict:
    result = run_cli(
        "model=o3", f"model.base_url={base_url}", "model.api_key_env=null",
        "judge=openai_compatible", "judge.name=bench-judge", f"judge.base_url={base_url}",
        f"dataset.path={data}", "wandb=disabled", "runner.progress=false", *extra,
        f"hydra.run.dir={run_dir}", env={"HEALTHBENCH_CACHE_DIR": str(run_dir / "cache")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((run_dir / "summary.json").read_text())


def test_o3_preset_equals_the_reference_responses_sampler(tmp_path: Path) -> None:
    rows = bench_module("throughput").synthetic_rows(40, seed=11)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "ref").mkdir()
    with ServerProcess(server_args(latency_ms=0)) as server:
        reference = subprocess.run(
            [sys.executable, str(BENCH / "reference_style.py"), f"--data={data}",
             f"--base-url={server.base_url}", "--threads=4", "--sampler=responses",
             f"--model={O3}", f"--out={tmp_path / 'ref' / 'result.json'}"],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert reference.returncode == 0, reference.stderr[-3000:]
        summary = harness(data, server.base_url, tmp_path / "o3")
        # o3 as this harness sampled it before: chat, with the system message
        chat = harness(
            data, server.base_url, tmp_path / "chat", "model.api=chat",
            "model.system_message=You are a helpful assistant.",
        )  # fmt: skip
    expected = json.loads((tmp_path / "ref" / "metrics.json").read_text())
    compared = [name for name in expected if not name.endswith(":bootstrap_std")]

    def means(metrics: dict) -> set[str]:
        return {n for n in metrics if not n.endswith((":n_samples", ":bootstrap_std"))}

    # every metric the reference computes (each tag's), the harness's length-adjusted extras aside
    ours = {n for n in means(summary["metrics"]) if not n.startswith("length_adjusted_score")}
    assert ours - {"score"} == means(expected) and len(ours) >= 10
    for name in compared:  # every mean and n_samples, to the last digit
        assert summary["metrics"][name] == expected[name], name
    assert summary["protocol"]["endpoints"]["model"]["api"] == "responses"
    assert not [d for d in summary["protocol"]["deviations"] if d.startswith("model.")]
    assert chat["metrics"]["overall_score"] != expected["overall_score"]
    assert "model.api: responses -> chat" in chat["protocol"]["deviations"]

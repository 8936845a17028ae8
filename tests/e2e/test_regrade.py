"""A run's own replies, regraded from its examples file or its results dataset, score the same.

End to end: `python -m healthbench_exp` in a subprocess on the bundled sample and the built-in
endpoint. The bundled sample has a row whose prompt carries its own system message, so the model
was sent two system messages there: the regrade must grade that exact conversation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")


def criterion_verdicts(run_dir: Path) -> list[tuple]:
    rows = [json.loads(line) for line in (run_dir / "per_criterion.jsonl").read_text().splitlines()]
    return sorted(
        (r["prompt_id"], r["rollout"], r["criterion_index"], r["criteria_met"], r["explanation"])
        for r in rows
    )


def graded_conversations(run_dir: Path) -> dict[tuple[str, int], list]:
    rows = [json.loads(line) for line in (run_dir / "examples.jsonl").read_text().splitlines()]
    return {(r["prompt_id"], r["rollout"]): [*r["messages"], r["completion"]] for r in rows}


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One sampled demo run and its response cache."""
    root = tmp_path_factory.mktemp("regrade")
    cache = root / "cache"
    result = run_cli(
        *DEMO,
        "sampling.num_examples=16",
        f"hydra.run.dir={root / 'first'}",
        env={"HEALTHBENCH_CACHE_DIR": str(cache)},
    )
    assert result.returncode == 0, result.stderr
    return root / "first", cache


@pytest.mark.parametrize("source", ["examples.jsonl", "results"])
def test_a_runs_own_replies_regrade_to_the_same_score_with_no_calls(
    first_run: tuple[Path, Path], source: str, tmp_path: Path
) -> None:
    first, cache = first_run
    examples = [json.loads(line) for line in (first / "examples.jsonl").read_text().splitlines()]
    # the sample's prompts include one with its own system message: sent after the model's
    assert any([m["role"] for m in e["messages"]][:2] == ["system", "system"] for e in examples)
    result = run_cli(
        *DEMO,
        "sampling.num_examples=16",
        "completions=file",
        f"completions.path={first / source}",
        f"hydra.run.dir={tmp_path / 'regrade'}",
        env={"HEALTHBENCH_CACHE_DIR": str(cache)},
    )
    assert result.returncode == 0, result.stderr
    before = json.loads((first / "summary.json").read_text())
    after = json.loads((tmp_path / "regrade" / "summary.json").read_text())
    assert after["metrics"] == before["metrics"]  # bootstrap stds included: the same row order
    assert after["metrics"]["overall_score:n_samples"] == 16
    assert criterion_verdicts(tmp_path / "regrade") == criterion_verdicts(first)
    assert graded_conversations(tmp_path / "regrade") == graded_conversations(first)
    counts = after["counts"]
    assert counts["model_requests"] == 0 and counts["judge_requests"] == 0
    assert counts["judge_cache_hits"] == before["counts"]["judge_requests"] > 0


def test_prompt_id_and_completion_alone_are_graded_after_the_models_system_message(
    first_run: tuple[Path, Path], tmp_path: Path
) -> None:
    """Without recorded messages, a reply is graded on `model.system_message` + the prompt,
    what the reference's sampler sends; so a run's replies still regrade to its score."""
    first, cache = first_run
    replies = tmp_path / "replies.jsonl"
    with replies.open("w") as out:
        for line in (first / "examples.jsonl").read_text().splitlines():
            row = json.loads(line)
            out.write(json.dumps({"prompt_id": row["prompt_id"], "completion": row["completion"]}))
            out.write("\n")
    result = run_cli(
        *DEMO,
        "sampling.num_examples=16",
        "completions=file",
        f"completions.path={replies}",
        f"hydra.run.dir={tmp_path / 'regrade'}",
        env={"HEALTHBENCH_CACHE_DIR": str(cache)},
    )
    assert result.returncode == 0, result.stderr
    before = json.loads((first / "summary.json").read_text())
    after = json.loads((tmp_path / "regrade" / "summary.json").read_text())
    assert after["metrics"] == before["metrics"]
    assert after["counts"]["judge_requests"] == 0
    assert graded_conversations(tmp_path / "regrade") == graded_conversations(first)

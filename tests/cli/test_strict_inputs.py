"""Numbers and files that cannot be trusted are refused; every JSON file a run writes is strict."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from healthbench_exp.core.strict_json import dumps
from healthbench_exp.output.files import JsonlWriter, write_json
from tests.conftest import make_row
from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")


def strict_loads(text: str) -> Any:
    """json.loads that rejects NaN, Infinity and -Infinity, as strict parsers do."""

    def refuse(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def check_strict_json_files(run_dir: Path) -> int:
    """Parse every .json and .jsonl file under `run_dir` strictly; return how many."""
    files = [*run_dir.rglob("*.json"), *run_dir.rglob("*.jsonl")]
    for path in files:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            for line in text.splitlines():
                strict_loads(line)
        else:
            strict_loads(text)
    return len(files)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_points_are_refused_with_line_and_id(tmp_path: Path, constant: str) -> None:
    good = json.dumps(make_row("p1"))
    bad = json.dumps(make_row("p2")).replace('"points": 8', f'"points": {constant}')
    assert constant in bad
    data = tmp_path / "data.jsonl"
    data.write_text(f"{good}\n{bad}\n", encoding="utf-8")
    result = run_cli(*DEMO, f"dataset.path={data}", f"hydra.run.dir={tmp_path / 'out'}")
    assert result.returncode == 2, result.stderr
    value = {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[constant]
    assert (
        f"error: data.jsonl line 2 (prompt_id p2): rubrics[1] 'points' must be a finite number, "
        f"got {value}"
    ) in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_empty_and_undecodable_files_are_named(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    result = run_cli(*DEMO, f"dataset.path={empty}", f"hydra.run.dir={tmp_path / 'a'}")
    assert result.returncode == 2
    assert f"error: JSONL file {empty} is empty" in result.stderr
    latin1 = tmp_path / "latin1.jsonl"
    row = json.dumps(make_row("p2", canary="café"), ensure_ascii=False)
    latin1.write_bytes((json.dumps(make_row("p1")) + "\n" + row + "\n").encode("latin-1"))
    result = run_cli(*DEMO, f"dataset.path={latin1}", f"hydra.run.dir={tmp_path / 'b'}")
    assert result.returncode == 2
    assert "error: latin1.jsonl line 2 is not UTF-8 (byte 0xe9)" in result.stderr
    assert "Traceback" not in result.stderr


BAD_OPTIONS = {
    "sampling.max_tokens=-5": "sampling.max_tokens must be >= 1 or null, got -5",
    "judge.temperature=-3": "judge.temperature must be in [0, 2] or null, got -3.0",
    "sampling.temperature=nan": "sampling.temperature must be a finite number in [0, 2] or null, "
    "got nan",
    "runner.connect_timeout_s=-1": "runner.connect_timeout_s must be > 0, got -1.0",
    "runner.request_timeout_s=0": "runner.request_timeout_s must be > 0, got 0.0",
    "budget.max_usd=inf": "budget.max_usd must be a finite number > 0 or null, got inf",
    "offline_server.fenced_rate=1.5": "offline_server.fenced_rate must be in [0, 1], got 1.5",
    "scoring.length_penalty_per_500_chars=nan": "scoring.length_penalty_per_500_chars must be "
    "a finite number or null, got nan",
}


@pytest.mark.parametrize("dry_run", [False, True])
def test_every_bad_number_is_named_together_before_any_request(
    tmp_path: Path, dry_run: bool
) -> None:
    result = run_cli(
        *DEMO, *BAD_OPTIONS, f"dry_run={dry_run}", f"hydra.run.dir={tmp_path}",
        "model.price.input_per_mtok=1", "model.price.output_per_mtok=1",
        "judge.price.input_per_mtok=1", "judge.price.output_per_mtok=1",
    )  # fmt: skip
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1
    for message in BAD_OPTIONS.values():
        assert message in errors[0]
    assert not (tmp_path / "examples.jsonl").exists()  # nothing was sent
    assert not (tmp_path / "estimate.json").exists()
    # a run refused before its first request leaves only its log, which names the error
    assert sorted(p.name for p in tmp_path.iterdir()) == ["healthbench.log"]
    assert BAD_OPTIONS["sampling.max_tokens=-5"] in (tmp_path / "healthbench.log").read_text()


def test_writers_write_undefined_numbers_as_null(tmp_path: Path) -> None:
    data = {"score": math.nan, "rows": [1.5, math.inf, (-math.inf, 2)], "n": 3, "ok": None}
    expected = {"score": None, "rows": [1.5, None, [None, 2]], "n": 3, "ok": None}
    write_json(tmp_path / "summary.json", data)
    assert strict_loads((tmp_path / "summary.json").read_text()) == expected
    with JsonlWriter(tmp_path / "rows.jsonl") as writer:
        writer.write(data)
    assert strict_loads((tmp_path / "rows.jsonl").read_text()) == expected
    assert dumps({"a": 1.0}) == json.dumps({"a": 1.0})  # finite data: written as before


def test_every_json_file_a_run_writes_is_strict(tmp_path: Path) -> None:
    runs = {
        "eval": [
            "sampling.num_examples=6", "sampling.rollouts_per_example=2",
            "scoring.length_penalty_per_500_chars=0.1", "offline_server.malformed_rate=0.3",
            "judge.max_parse_retries=0", "runner.max_failure_fraction=1.0",
        ],
        "meta": ["task=meta_eval", "sampling.num_examples=10"],
        "dry": ["dry_run=true"],
    }  # fmt: skip
    for name, args in runs.items():
        result = run_cli(*DEMO, *args, f"hydra.run.dir={tmp_path / name}")
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "dry" / "estimate.json").exists()
    summary = strict_loads((tmp_path / "eval" / "summary.json").read_text())
    assert summary["counts"]["ungraded_criteria"] > 0 and summary["repeats"] is not None
    assert check_strict_json_files(tmp_path) >= 10

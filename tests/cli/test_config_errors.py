"""Configuration mistakes on the command line: exit 2, one line naming the key, nothing written.

End to end: `python -m healthbench_exp` in a subprocess, as a user runs it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (  # ran at T=0.5 with the typo stored in the config
            "+sampling.temprature=0",
            "unknown config option 'sampling.temprature' (added with '+': the schema has no "
            "such key). Did you mean 'temperature'?",
        ),
        (  # exit 1 with Hydra's several lines
            "difficulty=foo",
            "difficulty=foo: difficulty has no option 'foo'. Valid choices for difficulty: "
            "all, consensus, hard, professional, sample",
        ),
        ("sampling.temperature=hot", "sampling.temperature takes a number or null, not 'hot'"),
        ("task.kind=evl", "task.kind takes one of eval, meta_eval, not 'evl'"),
        ("+sampling.temperature=0", "set it without '+' (sampling.temperature=0)"),
        (  # the brackets forgotten: Hydra's "Error merging override ... ListConfig", exit 1
            "jury=gpt54",
            "jury=gpt54: jury takes a list, not 'gpt54'; write jury=[gpt54]",
        ),
    ],
)
def test_a_configuration_mistake_exits_2_with_one_line_naming_the_key(
    tmp_path: Path, override: str, expected: str
) -> None:
    run_dir = tmp_path / "run"
    result = run_cli(*DEMO, override, f"hydra.run.dir={run_dir}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert expected in result.stderr
    assert not run_dir.exists()  # refused before Hydra started: not even a log


def test_a_sweep_with_a_bad_choice_exits_2_before_any_job(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    result = run_cli("-m", *DEMO, "difficulty=sample,hardd", f"hydra.sweep.dir={sweep_dir}")
    assert result.returncode == 2, result.stderr
    assert "Did you mean 'hard'?" in result.stderr and result.stderr.count("\n") == 1
    assert not sweep_dir.exists()


def test_more_examples_than_the_data_has_says_once_how_many_run(tmp_path: Path) -> None:
    result = run_cli(*DEMO, "sampling.num_examples=100000", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 0, result.stderr
    said = "sampling.num_examples=100000: the data has 24 rows; running all 24"
    assert (result.stdout + result.stderr).count(said) == 1
    assert "n=24" in result.stdout

"""What a new user's first hour runs into, end to end, as they would run it (issue 45): a second
judge beside the demo's in one response cache, and the demo's output read by `head` or by no one.

Each run is a real `python -m healthbench_exp` (forked from tests/zygote.py where its standard
streams can be pipes this test holds; a plain interpreter where the test needs a stream the
zygote cannot hand over, such as one closed before the run starts)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.test_e2e import run_cli, run_module

DEMO_SCORE = 0.2879  # the README's figure


def cache_cli(*args: str) -> subprocess.CompletedProcess:
    return run_module("healthbench_exp.cache", *args, timeout=120)


def stats_lines(cache: Path) -> dict[str, int]:
    """`stats`' entries per profile line, by its role and name (`judge offline-judge-b`)."""
    result = cache_cli("stats", "--dir", str(cache))
    assert result.returncode == 0, result.stderr
    found = {}
    for line in result.stdout.splitlines():
        if " entries " in line and " at builtin " in line:
            count = int(line.split()[0].replace(",", ""))
            who = line.split("  ")[-1].split(" at builtin ")[0]
            found[who] = count
    return found


def test_a_second_judge_in_the_demo_cache_is_filed_under_its_own_name(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    common = ["experiment=demo", "wandb.mode=disabled", f"cache.dir={cache}"]
    demo = run_cli(*common, f"hydra.run.dir={tmp_path / 'demo'}")
    assert demo.returncode == 0, demo.stderr
    # a second judge at the same built-in endpoint, with the same settings but its name
    second = run_cli(*common, "judge.name=offline-judge-b", f"hydra.run.dir={tmp_path / 'b'}")
    assert second.returncode == 0, second.stderr
    assert "from the cache, not paid again: model 24, judge 0" in second.stdout
    assert stats_lines(cache) == {
        "model offline-model": 24,
        "judge offline-judge": 106,
        "judge offline-judge-b": 106,
    }
    # the dry run's estimates from history are each judge's own
    for name, history in (("offline-judge-b", 106), ("offline-judge-c", None)):
        dry = run_cli(*common, f"judge.name={name}", "dry_run=true",
                      f"hydra.run.dir={tmp_path / ('dry-' + name)}")  # fmt: skip
        assert dry.returncode == 0, dry.stderr
        (judge_line,) = [line for line in dry.stdout.splitlines() if line.startswith("  judge ")
                         and ("measured" in line or "assumed" in line)]  # fmt: skip
        if history is None:  # a judge that never ran has no history, whatever its neighbours'
            assert "assumed" in judge_line and "(no history)" in judge_line, judge_line
        else:
            assert f"history of {history} replies of this judge" in judge_line, judge_line
    # prune by the second judge's name removes its entries only
    removed = cache_cli("prune", "--dir", str(cache), "--name", "offline-judge-b", "--yes")
    assert removed.returncode == 0, removed.stderr
    assert "removed 106 entries" in removed.stdout
    assert stats_lines(cache) == {"model offline-model": 24, "judge offline-judge": 106}
    again = run_cli(*common, f"hydra.run.dir={tmp_path / 'again'}")  # the demo's judge is whole
    assert "from the cache, not paid again: model 24, judge 106" in again.stdout


def summary_score(run_dir: Path) -> float:
    return round(json.loads((run_dir / "summary.json").read_text())["metrics"]["overall_score"], 4)

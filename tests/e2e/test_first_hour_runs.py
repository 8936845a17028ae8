"""What a new user's first hour runs into, end to end, as they would run it (issue 45): a second
judge beside the demo's in one response cache, and the demo's output read by `head` or by no one.

Each run is a real `python -m healthbench_exp` (forked from tests/zygote.py where its standard
streams can be pipes this test holds; a plain interpreter where the test needs a stream the
zygote cannot hand over, such as one closed before the run starts)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_e2e import REPO, run_cli, run_module

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


# ---- output no one reads (issue 45, item 2) -------------------------------------------------

RUN_FILES = {
    "status.json", "summary.json", "examples.jsonl", "per_criterion.jsonl", "invocations.jsonl",
    "healthbench.log", "report.html", "report_examples.js", "results", "wandb", ".hydra",
}  # fmt: skip


def assert_completed(run_dir: Path, returncode: int, stderr: str = "") -> None:
    """The run finished as if its output had been read: exit 0, every file, status completed,
    the demo's score, and no traceback about the lost output."""
    assert returncode == 0, stderr
    found = {p.name for p in run_dir.iterdir()}
    assert found >= RUN_FILES, sorted(found)
    status = json.loads((run_dir / "status.json").read_text())
    assert status == {"status": "completed", "error": None}
    assert summary_score(run_dir) == DEMO_SCORE
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr
    log = (run_dir / "healthbench.log").read_text()
    assert "BrokenPipe" not in log and "Traceback" not in log, log


def demo_command(run_dir: Path) -> str:
    """The README's demo (W&B offline, as it runs it), in a fresh interpreter."""
    return (
        f"{shlex.quote(sys.executable)} -m healthbench_exp experiment=demo hydra.run.dir={run_dir}"
    )


def isolated_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}


@pytest.mark.parametrize(
    "shell_tail",
    [
        "2> {err} | head -3",  # the run's log lines (on stdout too): the next one finds it closed
        "2> {err} | head -8",  # the table, cut short (whether it is still written: timing)
        # unbuffered, the table is written as printed: it often finds the pipe closed, which
        # left status.json "running" (the print comes after the run's end); timing, not always
        "2> {err} | head -8 #unbuffered",
        "2>&1 | head -3",  # both streams into one pipe that closes
        "> /dev/null 2> >(head -c 100 > /dev/null)",  # the progress bar's reader goes early
    ],
)
def test_a_pipe_closed_mid_run_never_stops_the_run(tmp_path: Path, shell_tail: str) -> None:
    run_dir, err = tmp_path / "run", tmp_path / "stderr.txt"
    command = f"{demo_command(run_dir)} {shell_tail.format(err=err)}; exit ${{PIPESTATUS[0]}}"
    if shell_tail.endswith("#unbuffered"):
        command = f"PYTHONUNBUFFERED=1 {command}"
    result = subprocess.run(["bash", "-c", command], cwd=REPO, env=isolated_env(tmp_path),
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    stderr = err.read_text() if err.exists() else result.stderr
    assert_completed(run_dir, result.returncode, stderr + result.stdout)


def closed_pipe() -> int:
    """The write end of a pipe whose reader has gone before anything was written."""
    read, write = os.pipe()
    os.close(read)
    return write


@pytest.mark.parametrize("which", ["stdout", "stderr"])
@pytest.mark.parametrize("how", ["reader gone", "closed"])
def test_a_stream_gone_before_the_start_never_stops_the_run(
    tmp_path: Path, which: str, how: str
) -> None:
    run_dir = tmp_path / "run"
    other = "stderr" if which == "stdout" else "stdout"
    if how == "closed":  # `>&-` / `2>&-`: the descriptor is not open at all
        redirect = ">&-" if which == "stdout" else "2>&-"
        result = subprocess.run(["bash", "-c", f"{demo_command(run_dir)} {redirect}"],
                                cwd=REPO, env=isolated_env(tmp_path), capture_output=True,
                                text=True, timeout=300)  # fmt: skip
        seen = getattr(result, other)
    else:
        lost = closed_pipe()
        try:
            result = subprocess.run(
                ["bash", "-c", f"exec {demo_command(run_dir)}"], cwd=REPO,
                env=isolated_env(tmp_path), text=True, timeout=300,
                **{which: lost, other: subprocess.PIPE},  # type: ignore[call-overload]
            )  # fmt: skip
        finally:
            os.close(lost)
        seen = getattr(result, other)
    assert_completed(run_dir, result.returncode, seen if other == "stderr" else "")
    if other == "stdout":  # the table is still printed where someone reads
        assert "overall_score          0.2879" in seen and f"outputs: {run_dir}" in seen
    else:
        assert "Traceback" not in seen and "BrokenPipe" not in seen

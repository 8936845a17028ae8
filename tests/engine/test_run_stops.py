"""Failures mid-run say what happened and keep what was paid for: Ctrl-C and SIGTERM, a full or
read-only output disk, a full or damaged response cache. Each test runs the CLI as a user does.

Full and read-only disks are real: a small (or read-only) tmpfs where this process may mount one
(root in most CI containers), else a file-size limit (`RLIMIT_FSIZE`, unprivileged) for the full
disk and permissions for the read-only directory. The tests that need a tmpfs skip without one,
except with HEALTHBENCH_REQUIRE_TMPFS=1 (as `.ci/run` sets), where they fail instead.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests import zygote
from tests.cli.test_run_lock import lines, start_run, wait_for
from tests.conftest import DemoRun
from tests.e2e.test_e2e import run_cli
from tests.output.test_tracking import wandb_env
from tests.wandb_log import read_run

DEMO = ("experiment=demo", "runner.progress=false")


def no_leftovers(run_dir: Path) -> None:
    assert not list(run_dir.rglob("*.partial")), "a half-written file was left behind"
    assert not (run_dir / ".lock").exists()


def status(run_dir: Path) -> dict:
    return json.loads((run_dir / "status.json").read_text())


def demo_metrics(demo: DemoRun) -> dict:
    """The metrics of the session's demo run: what a clean run of DEMO scores."""
    return json.loads((demo.directory / "summary.json").read_text())["metrics"]


def no_tmpfs(reason: str) -> NoReturn:
    """Skip for want of a tmpfs (no mount rights), or fail where HEALTHBENCH_REQUIRE_TMPFS=1
    (as `.ci/run` sets: CI runs as root, where mount(8) works) says these tests must run."""
    if os.environ.get("HEALTHBENCH_REQUIRE_TMPFS") == "1":
        pytest.fail(f"HEALTHBENCH_REQUIRE_TMPFS=1 but no tmpfs could be mounted: {reason}")
    pytest.skip(reason)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path | None]]:
    """Mount a tmpfs of `size` (read-only if asked) and return its path; None where mounting is
    not allowed. Unmounted after the test."""
    mounted: list[Path] = []

    def mount(size: str, read_only: bool = False) -> Path | None:
        where = tmp_path / f"tmpfs{len(mounted)}"
        where.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True
        )
        if done.returncode != 0:
            return None
        mounted.append(where)
        return where

    yield mount
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_ctrl_c_and_sigterm_stop_cleanly_and_resume_finishes(
    tmp_path, monkeypatch, signum, demo_run: DemoRun
) -> None:
    env = wandb_env(tmp_path)
    for key, value in env.items():  # start_run passes os.environ
        monkeypatch.setenv(key, value)
    assert demo_run.returncode == 0, demo_run.stderr  # the clean run of the same experiment
    run_dir = tmp_path / "run"
    process = start_run(
        *DEMO, "runner.max_concurrent=1", "offline_server.latency_ms=300",
        f"hydra.run.dir={run_dir}",
    )  # fmt: skip
    wait_for(lambda: len(lines(run_dir / "examples.jsonl")) >= 3, process)
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 128 + signum
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    name = signal.Signals(signum).name
    assert f"interrupted by {name}" in err
    resume = f"python -m healthbench_exp resume={run_dir}"
    assert resume in err
    # the interrupted line stays the last; the partial table and `outputs:` come before it
    assert err.strip().splitlines()[-1].endswith(resume)
    assert out.strip().splitlines()[-1] == f"outputs: {run_dir}", out
    partial_summary_written(run_dir)
    recorded = status(run_dir)
    assert recorded["status"] == "interrupted"
    assert name in recorded["error"] and resume in recorded["error"]
    no_leftovers(run_dir)
    finished = [json.loads(line) for line in lines(run_dir / "examples.jsonl")]
    assert 3 <= len(finished) < 24
    # the W&B run is marked as stopped by the signal, not finished
    wandb_runs = sorted((tmp_path / "wandb_dir" / "wandb").glob("offline-run-*"))
    assert [read_run(r).exit_code for r in wandb_runs] == [128 + signum]

    resumed = run_cli(f"resume={run_dir}")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"] == demo_metrics(demo_run)
    assert summary["partial"] is False  # the partial summary is rewritten by the resumed run
    assert summary["counts"]["rows_scored"] == 24
    # nothing paid twice: the finished rows' replies are the run's records (or in the cache)
    assert summary["counts"]["model_requests"] <= 24 - len(finished)
    assert status(run_dir)["status"] == "completed"
    no_leftovers(run_dir)


def partial_summary_written(run_dir: Path, rows: int = 24) -> None:
    """An interrupted run's summary.json is partial, with its usage as invocations.jsonl
    records it (what was read and what was abandoned apart), and its report.html says PARTIAL."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is True
    (recorded,) = [json.loads(line) for line in lines(run_dir / "invocations.jsonl")]
    (invocation,) = summary["usage"]["invocations"]
    for role in ("model", "judge"):
        for key in ("requests", "cost_usd", "abandoned_in_flight", "abandoned_cost_usd"):
            assert invocation[role].get(key) == recorded["usage"][role].get(key), (role, key)
    assert summary["usage"]["total_cost_usd"] == recorded["usage"]["total_cost_usd"]
    counts = summary["counts"]  # every row in one state: those never finished are not run
    states = ("rows_scored", "rows_failed", "rows_unscorable", "rows_not_run")
    assert sum(counts[state] for state in states) == counts["rows"] == rows, counts
    assert counts["rows_scored"] <= len(lines(run_dir / "examples.jsonl")) < rows
    report = (run_dir / "report.html").read_text(encoding="utf-8")
    assert "banner-PARTIAL" in report and "banner-INTERRUPTED" in report


def test_a_full_output_disk_is_one_line_and_status_failed(tmp_path, tmpfs) -> None:
    disk = tmpfs("96k")
    if disk is not None:
        run_dir, limit = disk / "run", None
    else:  # no mount allowed: a file-size limit makes the same writes fail (EFBIG)
        run_dir, limit = tmp_path / "run", 32 * 1024

    result = zygote.run(
        *DEMO, f"hydra.run.dir={run_dir}", env={**os.environ, **wandb_env(tmp_path)}, fsize=limit
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Logging error" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: cannot write {run_dir}/")
    assert ("No space left on device" if limit is None else "File too large") in errors[0]
    assert f"resume={run_dir}" in errors[0]
    recorded = status(run_dir)
    assert recorded["status"] == "failed" and "cannot write" in recorded["error"]
    no_leftovers(run_dir)
    # what was paid for is in the cache: after freeing space, resume pays only what is missing
    if disk is not None:
        subprocess.run(["mount", "-o", "remount,size=10m", str(disk)], check=True)
    resumed = run_cli(f"resume={run_dir}", env=wandb_env(tmp_path))
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["rows_scored"] == 24
    # the finished calls (in the run's records or the cache) were not all paid again
    counts = summary["counts"]
    assert counts["model_requests"] + counts["judge_requests"] < 24 + counts["criteria"]


def test_a_run_onto_a_full_disk_stops_before_writing(tmp_path, tmpfs) -> None:
    disk = tmpfs("32k")
    if disk is None:
        no_tmpfs("needs a small tmpfs (mount rights)")
    result = run_cli(*DEMO, f"hydra.run.dir={disk / 'run'}")
    assert result.returncode == 2
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message, result.stderr
    assert message == (
        f"error: only 32 KiB free on the disk of {disk / 'run'}; free space or choose another "
        "hydra.run.dir"
    )


def read_only_mount(tmpfs: Callable[..., Path | None]) -> Path | None:
    """A read-only tmpfs; else an existing read-only mount's directory; else None."""
    mounted = tmpfs("64k", read_only=True)
    if mounted is not None:
        return mounted
    for line in Path("/proc/mounts").read_text().splitlines():
        _device, where, _kind, options, *_ = line.split()
        if "ro" in options.split(",") and Path(where).is_dir():
            return Path(where)
    return None


def test_a_read_only_output_directory_is_one_line(tmp_path, tmpfs) -> None:
    if os.geteuid() != 0:  # permissions bind an ordinary user
        parent = tmp_path / "read-only"
        parent.mkdir(mode=0o555)
    else:  # root ignores permissions: a read-only file system
        parent = read_only_mount(tmpfs)
        if parent is None:
            no_tmpfs("running as root without a read-only file system or mount rights")
    run_dir = parent / "healthbench-run"
    result = run_cli(*DEMO, f"hydra.run.dir={run_dir}")
    assert result.returncode == 2
    message = result.stderr.strip()
    assert "\n" not in message and "Traceback" not in message, result.stderr
    assert message.startswith(f"error: cannot write into {run_dir} (")
    assert "choose another hydra.run.dir" in message


def damage(cache_file: Path) -> None:
    """Overwrite every page after the first two (header and schema) with garbage."""
    data = bytearray(cache_file.read_bytes())
    data[2 * 4096 :] = b"\x5a" * (len(data) - 2 * 4096)
    cache_file.write_bytes(bytes(data))


def test_a_damaged_cache_is_set_aside_with_one_warning(tmp_path, isolated_cache) -> None:
    first = run_cli(*DEMO, "wandb.mode=disabled", f"hydra.run.dir={tmp_path / 'first'}")
    assert first.returncode == 0, first.stderr
    cache_file = isolated_cache / "responses.sqlite"
    damage(cache_file)
    run_dir = tmp_path / "second"
    result = run_cli(*DEMO, "wandb.mode=disabled", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    warnings = [line for line in output.splitlines() if "response cache" in line]
    assert len(warnings) == 1, output
    assert f"{cache_file} failed (database disk image is malformed)" in warnings[0]
    assert "move the file away" in warnings[0]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        summary["metrics"]
        == json.loads((tmp_path / "first" / "summary.json").read_text())["metrics"]
    )
    assert status(run_dir)["status"] == "completed"


def test_a_full_cache_disk_keeps_every_paid_reply(tmp_path, tmpfs, demo_run: DemoRun) -> None:
    disk = tmpfs("96k")
    if disk is None:
        no_tmpfs("needs a small tmpfs (mount rights) to fill the cache's disk")
    assert demo_run.returncode == 0, demo_run.stderr  # the clean run of the same experiment
    run_dir = tmp_path / "run"
    result = run_cli(
        *DEMO, "wandb.mode=disabled", f"hydra.run.dir={run_dir}",
        env={"HEALTHBENCH_CACHE_DIR": str(disk)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "Traceback" not in output
    warnings = [line for line in output.splitlines() if "response cache" in line]
    assert len(warnings) == 1, output
    assert "(database or disk is full)" in warnings[0] and "free space" in warnings[0]
    summary = json.loads((run_dir / "summary.json").read_text())
    counts = summary["counts"]
    # every paid reply was used: each call paid once, every row scored, the same score
    assert counts["model_requests"] == 24 and counts["rows_scored"] == 24
    assert counts["ungraded_criteria"] == 0
    assert summary["metrics"] == demo_metrics(demo_run)


def test_a_resume_that_fails_to_start_keeps_the_resume_command(tmp_path, isolated_cache) -> None:
    """A run with results whose resume fails before it starts (here: a cache path that is not a
    directory) is `failed` with the reason and the command that finishes it, as a quota stop is."""
    run_dir = tmp_path / "run"
    quota = ("offline_server.quota_exhausted=true", "offline_server.limited_role=judge")
    first = run_cli(
        *DEMO, "wandb.mode=disabled", f"hydra.run.dir={run_dir}", "cache.enabled=false", *quota
    )
    assert first.returncode == 2, first.stderr
    assert (run_dir / "examples.jsonl").exists()
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    resumed = run_cli(
        f"resume={run_dir}",
        "offline_server.quota_exhausted=false",
        "cache.enabled=true",
        f"cache.dir={not_a_dir / 'sub'}",
    )
    assert resumed.returncode == 2, resumed.stderr
    hint = f"then finish with: python -m healthbench_exp resume={run_dir}"
    assert hint in resumed.stderr and "Traceback" not in resumed.stderr
    record = status(run_dir)
    assert record["status"] == "failed"
    assert "cannot use the response cache" in record["error"] and hint in record["error"]
    assert (run_dir / "examples.jsonl").exists()  # what the first invocation wrote is kept


def test_an_insufficient_quota_stop_writes_the_summary_and_report_with_its_spend(
    tmp_path, isolated_cache
) -> None:
    """The judge answers 429 insufficient_quota: the run halts (nothing more is sent), records
    every row (`not run` where a judge call was refused), writes summary.json and report.html
    with its spend, prints its partial table and ends `failed` (exit 2) with the resume."""
    run_dir = tmp_path / "run"
    quota = ("offline_server.quota_exhausted=true", "offline_server.limited_role=judge")
    result = run_cli(
        *DEMO, "wandb.mode=disabled", f"hydra.run.dir={run_dir}", "cache.enabled=false", *quota
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["partial"] is True and summary["counts"]["rows_not_run"] > 0
    model_calls = summary["usage"]["model"]["requests"]
    assert model_calls > 0 and summary["usage"]["total_cost_usd"] > 0  # its spend
    assert "PARTIAL" in (run_dir / "report.html").read_text()
    assert "  PARTIAL: " in result.stdout
    assert result.stdout.strip().splitlines()[-1] == f"outputs: {run_dir}"
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: stopped early: judge endpoint ") and "insufficient_quota" in last
    assert f"spent ${summary['usage']['total_cost_usd']:.4f} in this invocation" in last, last
    assert f"(model {model_calls} calls, judge 0)" in last, last
    assert last.endswith(f"then finish with: python -m healthbench_exp resume={run_dir}"), last
    recorded = status(run_dir)
    assert recorded["status"] == "failed" and recorded["error"] in last

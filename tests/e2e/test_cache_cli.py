"""`python -m healthbench_exp.cache` on a real cache directory a real run filled, including a
prune while a run (with latency) writes to the same cache."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests import zygote
from tests.e2e.test_e2e import REPO, run_cli, run_module


def cache_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_module("healthbench_exp.cache", *args, env=env, timeout=120)


def entries(cache: Path) -> int:
    with sqlite3.connect(cache / "responses.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def written(cache: Path) -> int:
    """Entries in the cache now; 0 before the run created its database and table."""
    if not (cache / "responses.sqlite").exists():
        return 0
    try:
        return entries(cache)
    except sqlite3.OperationalError:  # the file exists, its table not yet
        return 0


def test_stats_prune_and_clear_on_a_real_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert "no response cache" in cache_cli("stats", "--dir", str(cache)).stdout
    for run in ("first", "again"):  # the second is answered by the cache
        result = run_cli(
            "experiment=demo", "wandb.mode=disabled", f"hydra.run.dir={tmp_path / run}",
            env={"HEALTHBENCH_CACHE_DIR": str(cache)},
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
    # the directory from $HEALTHBENCH_CACHE_DIR, as the run resolved it
    stats = cache_cli("stats", env={"HEALTHBENCH_CACHE_DIR": str(cache)})
    assert stats.returncode == 0, stats.stderr
    assert "130 entries" in stats.stdout
    assert "24 entries" in stats.stdout and "model offline-model" in stats.stdout
    assert "106 entries" in stats.stdout and "judge offline-judge" in stats.stdout
    assert "hit rate 100%" in stats.stdout and "hit rate   0%" in stats.stdout
    # an unknown name names the known ones
    unknown = cache_cli("prune", "--dir", str(cache), "--name", "gpt-5")
    assert unknown.returncode == 2
    assert "known: offline-judge, offline-model" in unknown.stderr
    assert cache_cli("prune", "--dir", str(cache)).returncode == 2  # no criterion: refused
    # by name: listed, nothing removed, until --yes
    listed = cache_cli("prune", "--dir", str(cache), "--name", "offline-model")
    assert "would remove 24 entries" in listed.stdout and entries(cache) == 130
    removed = cache_cli("prune", "--dir", str(cache), "--name", "offline-model", "--yes")
    assert "removed 24 entries" in removed.stdout and entries(cache) == 106
    # by age: nothing is a day old
    assert "nothing" in cache_cli("prune", "--dir", str(cache), "--older-than", "1d").stdout
    # by size: the newest entries that fit are kept
    cache_cli("prune", "--dir", str(cache), "--max-size", "10KB", "--yes")
    assert 0 < entries(cache) < 106
    assert "would remove" in cache_cli("clear", "--dir", str(cache)).stdout
    assert entries(cache) > 0
    cleared = cache_cli("clear", "--dir", str(cache), "--yes")
    assert cleared.returncode == 0 and entries(cache) == 0
    for command in ("stats", "prune", "clear"):
        assert "--dir" in cache_cli(command, "--help").stdout


def test_prune_while_a_run_writes_keeps_the_run_working(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    job = zygote.spawn(
        "experiment=demo", "wandb.mode=disabled", "offline_server.latency_ms=150",
        "runner.max_concurrent=2", "runner.max_parallel_judges=2", f"cache.dir={cache}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    # event-driven: each prune follows new entries the run wrote (since the start, then since
    # the last prune), never a timer; two prunes while the run is still going
    pruned = deferred = 0
    deadline = time.monotonic() + 120
    for _ in range(2):
        while written(cache) == 0:
            assert job.poll() is None, "the run ended before it wrote new entries"
            assert time.monotonic() < deadline, "no new cache entries within 120 s"
            time.sleep(0.05)
        result = cache_cli("prune", "--dir", str(cache), "--older-than", "0s", "--yes")
        assert result.returncode == 0, result.stderr
        pruned += "removed" in result.stdout
        deferred += "a run is writing to it" in result.stdout  # no VACUUM under a run
    _, err = job.communicate(timeout=120)
    assert job.returncode == 0, err
    assert pruned == 2 and deferred == 2  # entries were removed while the run was writing
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["counts"]["rows_scored"] == 24 and summary["counts"]["rows_failed"] == 0
    with sqlite3.connect(cache / "responses.sqlite") as db:  # what is left is whole
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT COUNT(*) FROM responses WHERE text IS NULL").fetchone()[0] == 0
    stats = cache_cli("stats", "--dir", str(cache)).stdout
    assert "hit rate   0%" in stats and "running" not in stats  # the run closed its record


# A read-only cache (a shared copy on a cluster). Permissions do not bind root, so as root the
# commands run with the capabilities that bypass them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
# CAP_FOWNER) dropped, as `setpriv` drops them from its bounding set: still uid 0, but refused a
# write the file modes forbid, as any user is (the test checks that first, with `setpriv`).
UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
BYPASSING = [1, 2, 3]  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER


def as_reader(*args: str) -> subprocess.CompletedProcess:
    """`args` as a user the file modes bind (see UNPRIVILEGED)."""
    prefix = UNPRIVILEGED if os.geteuid() == 0 else []
    return subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=300, cwd=REPO)


def module_as_reader(module: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m <module> <args>` as a user the file modes bind (forked from tests/zygote.py,
    without the capabilities that bypass them)."""
    return zygote.run(*args, module=module, drop=BYPASSING if os.geteuid() == 0 else None)


def test_a_read_only_cache_is_read_and_left_as_it_is(tmp_path: Path) -> None:
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: file modes cannot make a cache read-only")
    cache = tmp_path / "cache"
    first = run_cli(
        "experiment=demo", "wandb.mode=disabled", f"cache.dir={cache}",
        f"hydra.run.dir={tmp_path / 'first'}",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    (cache / "responses.sqlite").chmod(0o444)
    cache.chmod(0o555)
    try:
        assert as_reader("touch", str(cache / "probe")).returncode != 0  # truly read-only
        before = {p.name: p.read_bytes() for p in cache.iterdir()}
        stats = module_as_reader("healthbench_exp.cache", "stats", "--dir", str(cache))
        assert stats.returncode == 0, stats.stderr
        assert "130 entries" in stats.stdout and "(read-only for this user)" in stats.stdout
        listed = module_as_reader("healthbench_exp.cache", "clear", "--dir", str(cache))
        assert listed.returncode == 0 and "would remove 130 entries" in listed.stdout
        refused = module_as_reader("healthbench_exp.cache", "clear", "--yes", "--dir", str(cache))
        assert refused.returncode == 2 and "is read-only for this user" in refused.stderr
        warning = "is read-only (130 entries): this run uses its replies but stores nothing new"
        for name, temperature, paid in (("hits", "0.5", "model 0, judge 0"), ("new", "0.7", None)):
            run = module_as_reader(
                "healthbench_exp", "experiment=demo", "wandb.mode=disabled",
                f"sampling.temperature={temperature}", f"cache.dir={cache}",
                f"hydra.run.dir={tmp_path / name}",
            )  # fmt: skip
            assert run.returncode == 0, run.stderr
            assert (run.stdout + run.stderr).count(warning) == 1
            assert "move the file away" not in run.stdout + run.stderr
            summary = json.loads((tmp_path / name / "summary.json").read_text())
            assert summary["counts"]["rows_scored"] == 24
            if paid:  # answered from the read-only cache
                assert f"requests: {paid} (from the cache" in run.stdout
                assert round(summary["metrics"]["overall_score"], 4) == 0.2879
            else:  # another temperature: paid, and stored nowhere
                assert "requests: model 24, judge 106" in run.stdout
        assert {p.name: p.read_bytes() for p in cache.iterdir()} == before
    finally:
        cache.chmod(0o755)


def test_stats_on_a_file_says_what_is_wrong(tmp_path: Path) -> None:
    file = tmp_path / "responses.sqlite"
    file.write_bytes(b"")
    result = cache_cli("stats", "--dir", str(file))
    assert result.returncode == 2
    assert f"{file} is a file, not a directory" in result.stderr
    assert f"({tmp_path} holds it)" in result.stderr and "no response cache" not in result.stdout
    under = cache_cli("stats", "--dir", str(file / "deeper"))
    assert under.returncode == 2 and f"is under {file}, a file" in under.stderr
    run = run_cli(
        "experiment=demo", "wandb.mode=disabled", f"cache.dir={file}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert run.returncode == 2 and "is a file, not a directory" in run.stderr

"""Nothing paid twice: the response cache, resume after kill -9, adaptive limits, bad input."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest

from healthbench_exp import run as run_eval
from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.config.schema import ConfigError, JudgeConfig, SamplingConfig
from healthbench_exp.model.cache import CachedReply, Profile, ResponseCache, request_key
from healthbench_exp.model.cache.admin import groups, last_runs, open_cache, profile_history
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.pacer import AdaptiveLimit
from tests import zygote
from tests.e2e.test_e2e import REPO, run_cli
from tests.engine.test_runner import make_config, read_jsonl, verdicts
from tests.zygote import ForkedServer


def test_cache_round_trip_and_keys(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    key = request_key(
        "builtin",
        {"model": "m", "temperature": 0.5},
        [{"role": "user", "content": "hi"}],
        "rollout=0",
    )
    assert cache.get(key) is None
    cache.put(key, CachedReply("hello", 3, 1))
    assert ResponseCache(tmp_path).get(key) == CachedReply("hello", 3, 1)  # persisted
    messages = [{"role": "user", "content": "hi"}]
    other_keys = {
        request_key("builtin", {"model": "m", "temperature": 0.7}, messages, "rollout=0"),
        request_key("builtin", {"model": "m", "temperature": 0.5}, messages, "rollout=1"),
        request_key("http://x/v1", {"model": "m", "temperature": 0.5}, messages, "rollout=0"),
        request_key("builtin", {"model": "m2", "temperature": 0.5}, messages, "rollout=0"),
    }
    assert key not in other_keys and len(other_keys) == 4
    split = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    joined = [{"role": "user", "content": "ab"}]
    assert request_key("e", {}, split, "") != request_key("e", {}, joined, "")
    assert request_key("e", {}, [{"role": "user", "content": "x"}], "") != request_key(
        "e", {}, [{"role": "use", "content": "rx"}], ""
    )


def test_unreadable_cache_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "responses.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(ConfigError, match=r"cannot use the response cache .*responses\.sqlite"):
        ResponseCache(tmp_path)


WRITER = """
import sys
from pathlib import Path
from healthbench_exp.model.cache import CachedReply, ResponseCache
cache = ResponseCache(Path(sys.argv[1]))
start = int(sys.argv[2])
for i in range(start, start + 400):
    cache.put(f"key-{i}", CachedReply(f"reply-{i}", i, 1))
"""


def test_two_processes_write_one_cache(tmp_path: Path) -> None:
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), str(start)])
        for start in (0, 200)  # 200 keys overlap
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    cache = ResponseCache(tmp_path)
    assert len(cache) == 600
    assert all(cache.get(f"key-{i}") == CachedReply(f"reply-{i}", i, 1) for i in range(600))


def test_rerun_is_free_judge_change_reuses_replies_temperature_resamples(
    loopback_server, tmp_path
) -> None:
    server = loopback_server()
    config = make_config(server.base_url)
    first = run_eval(config, tmp_path / "first", {})
    sent = server.stats()["requests"]
    assert first["counts"]["model_requests"] == 8 and first["counts"]["model_cache_hits"] == 0

    again = run_eval(config, tmp_path / "again", {})
    assert server.stats()["requests"] == sent  # zero requests
    assert again["counts"]["model_requests"] == again["counts"]["judge_requests"] == 0
    assert again["counts"]["judge_cache_hits"] == first["counts"]["judge_requests"]
    assert again["metrics"] == first["metrics"]
    assert verdicts(tmp_path / "again") == verdicts(tmp_path / "first")

    new_judge = replace(config, judge=replace(config.judge, name="another-judge"))
    judged = run_eval(new_judge, tmp_path / "judged", {})
    assert judged["counts"]["model_requests"] == 0 and judged["counts"]["model_cache_hits"] == 8
    assert judged["counts"]["judge_requests"] == judged["counts"]["criteria"]

    hotter = replace(config, sampling=replace(config.sampling, temperature=0.9))
    resampled = run_eval(hotter, tmp_path / "hotter", {})
    assert resampled["counts"]["model_requests"] == 8


def test_cache_can_be_disabled(loopback_server, tmp_path, isolated_cache) -> None:
    from healthbench_exp.config.schema import CacheConfig

    server = loopback_server()
    config = make_config(server.base_url, cache=CacheConfig(enabled=False))
    run_eval(config, tmp_path / "a", {})
    second = run_eval(config, tmp_path / "b", {})
    assert second["counts"]["model_requests"] == 8
    assert not isolated_cache.exists()


def test_adaptive_limit_halves_on_429_and_recovers() -> None:
    async def go() -> list[int]:
        limit = AdaptiveLimit(16, SYSTEM_CLOCK.now, cooldown_s=0.0)
        seen = []
        limit.rate_limited()
        seen.append(limit.limit)
        limit.rate_limited()
        seen.append(limit.limit)
        for _ in range(4):  # one success per unit of the current limit raises it by one
            await limit.acquire()
            limit.release(success=True)
        seen.append(limit.limit)
        for _ in range(200):
            await limit.acquire()
            limit.release(success=True)
        seen.append(limit.limit)
        return seen

    assert asyncio.run(go()) == [8, 4, 5, 16]


def test_adaptive_limit_caps_requests_in_flight() -> None:
    async def go() -> int:
        limit = AdaptiveLimit(8, SYSTEM_CLOCK.now, cooldown_s=0.0)
        limit.rate_limited()  # now 4
        peak = active = 0

        async def task() -> None:
            nonlocal peak, active
            await limit.acquire()
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            limit.release(success=False)

        await asyncio.gather(*(task() for _ in range(40)))
        return peak

    assert asyncio.run(go()) == 4


def test_rate_limiting_lowers_the_limit_and_the_run_completes(loopback_server, tmp_path) -> None:
    # 30% of the requests refused at random (429/500/503 with a 5 ms Retry-After: brief, they
    # delay the request refused alone) and the first 4 judge calls refused without any header
    # (a limit's 429s: they halve the judge's requests in flight)
    server = loopback_server(
        error_rate=0.3, latency_ms=5, seed=1, rate_limited_first=4, limited_role="judge"
    )
    config = make_config(server.base_url, sampling=SamplingConfig())
    # 11 attempts per call: a call fails for good with probability 0.3**11, about 2e-6
    config = replace(
        config,
        judge=replace(config.judge, max_concurrency=32),
        runner=replace(config.runner, max_retries=10),
    )
    summary = run_eval(config, tmp_path, {})
    counts = summary["counts"]
    assert counts["rows_failed"] == 0 and counts["ungraded_criteria"] == 0
    assert counts["rate_limited"]["judge"] > 0
    assert counts["lowest_in_flight_limit"]["judge"] < 32


def server_requests(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as response:
        return json.loads(response.read())["requests"]


def wait_for_requests(
    base_url: str, at_least: int, process: zygote.ForkedRun | subprocess.Popen
) -> None:
    deadline = time.monotonic() + 120
    while server_requests(base_url) < at_least:
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the run did not get far enough"
        time.sleep(0.05)


def endpoint_args(url: str) -> list[str]:
    """The demo against an external server, at most 4 model and 8 judge calls in flight."""
    endpoints = [
        [f"{role}=openai_compatible", f"{role}.name={role[0]}", f"{role}.base_url={url}"]
        for role in ("model", "judge")
    ]
    limits = ["model.max_concurrency=4", "judge.max_concurrency=8"]
    return ["experiment=demo", "wandb=disabled", *endpoints[0], *endpoints[1], *limits]


@pytest.mark.parametrize("cache", ["shared", "off"])
def test_kill_9_then_resume_equals_a_clean_run(tmp_path: Path, cache: str) -> None:
    """With the shared cache, or with `cache.enabled=false` (the run's own call journal answers
    the calls finished inside rows the kill cut short, which the run's records lack)."""
    off = ("cache.enabled=false",) if cache == "off" else ()
    with ForkedServer(server_args(latency_ms=20)) as server:
        clean = run_cli(
            *endpoint_args(server.base_url),
            *off,
            f"hydra.run.dir={tmp_path / 'clean'}",
            env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "clean-cache")},
        )
        assert clean.returncode == 0, clean.stderr
        clean_requests = server_requests(server.base_url)
    run_dir = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "healthbench_exp",
        *endpoint_args("URL"),
        *off,
        f"hydra.run.dir={run_dir}",
    ]
    with ForkedServer(server_args(latency_ms=20)) as server:
        command = [a.replace("URL", server.base_url) for a in command]
        process = zygote.spawn(*command[3:])
        wait_for_requests(server.base_url, clean_requests // 2, process)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert json.loads((run_dir / "status.json").read_text())["status"] == "running"
        resumed = run_cli(f"resume={run_dir}")
        assert resumed.returncode == 0, resumed.stderr
        total = server_requests(server.base_url)
    # finished calls were answered from the cache; only the ones in flight at the kill
    # (at most model.max_concurrency + judge.max_concurrency = 12) were sent again
    assert clean_requests <= total <= clean_requests + 12
    assert verdicts(run_dir) == verdicts(tmp_path / "clean")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        summary["metrics"]
        == json.loads((tmp_path / "clean" / "summary.json").read_text())["metrics"]
    )
    # what finished before the kill came back from the run's own records or from the cache
    # (which of the two depends on where the kill landed); the request count above is what
    # proves nothing finished was paid twice
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    assert not (run_dir / ".calls").exists()  # a completed run's records hold every reply


def test_resume_needs_a_run_directory(tmp_path: Path) -> None:
    result = run_cli(f"resume={tmp_path}")
    assert result.returncode == 2
    assert f"{tmp_path} is not a healthbench-exp run directory" in result.stderr
    result = run_cli(f"resume={tmp_path}", "-m")
    assert result.returncode == 2 and "takes only key=value overrides" in result.stderr


def test_a_directory_that_is_not_ours_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("precious")
    result = run_cli("experiment=demo", "wandb=disabled", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 2
    assert "refusing to write into" in result.stderr and "thesis.tex" in result.stderr
    assert (tmp_path / "thesis.tex").read_text() == "precious"
    assert not (tmp_path / "summary.json").exists()


def test_too_many_failed_rows_exit_non_zero_and_resumable(tmp_path: Path) -> None:
    args = ["experiment=demo", "wandb=disabled", "offline_server.empty_reply_rate=0.3"]
    failing = run_cli(*args, f"hydra.run.dir={tmp_path / 'strict'}")
    assert failing.returncode == 3
    assert "more than runner.max_failure_fraction=0.01" in failing.stderr
    status = json.loads((tmp_path / "strict" / "status.json").read_text())
    assert status["status"] == "failed"
    summary = json.loads((tmp_path / "strict" / "summary.json").read_text())
    assert summary["counts"]["rows_failed"] > 0 and summary["partial"] is True
    # halted once the share was certain (tests/engine/test_fraction_stop.py): it says how to finish
    assert failing.stderr.strip().splitlines()[-1].endswith(f"resume={tmp_path / 'strict'}")
    lenient = run_cli(
        *args, "runner.max_failure_fraction=1.0", f"hydra.run.dir={tmp_path / 'lenient'}"
    )
    assert lenient.returncode == 0, lenient.stderr


def test_an_unparseable_judge_is_reported_as_ungraded(tmp_path: Path) -> None:
    result = run_cli(
        "experiment=demo", "wandb=disabled", "offline_server.malformed_rate=1.0",
        "judge.max_parse_retries=1", "judge.early_stop_unparseable=0",
        "runner.max_failure_fraction=1.0",  # no stop: every criterion is asked
        f"hydra.run.dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 5, result.stderr  # ungraded is not completed
    assert json.loads((tmp_path / "status.json").read_text())["status"] == "ungraded"
    assert "ungraded criteria 106/106" in result.stdout
    assert "no example could be scored" in result.stdout
    assert "ungraded criteria are left out of the scores" in result.stdout
    rows = read_jsonl(tmp_path / "per_criterion.jsonl")
    assert len(rows) == 106 and all(r["criteria_met"] is None for r in rows)


def test_judge_config_has_bounded_parse_retries(loopback_server, tmp_path) -> None:
    assert JudgeConfig().max_parse_retries == 3
    # a judge whose every verdict is unparseable: each criterion is asked 1 + max_parse_retries
    # times, then left ungraded; the server counts what it was sent
    server = loopback_server(malformed_rate=1.0)
    config = make_config(server.base_url, sampling=SamplingConfig(num_examples=2))
    judge = replace(config.judge, max_parse_retries=2, early_stop_unparseable=0)  # grade anyway
    config = replace(config, judge=judge)
    summary = run_eval(config, tmp_path / "run", {})
    criteria = read_jsonl(tmp_path / "run" / "per_criterion.jsonl")
    ran = {e["prompt_id"] for e in read_jsonl(tmp_path / "run" / "examples.jsonl")}
    sample = read_jsonl(REPO / "healthbench_exp" / "data" / "sample.jsonl")
    rubric_items = sum(len(row["rubrics"]) for row in sample if row["prompt_id"] in ran)
    assert len(ran) == 2
    assert len(criteria) == rubric_items > 0
    assert all(c["criteria_met"] is None for c in criteria)
    assert summary["counts"]["ungraded_criteria"] == rubric_items
    stats = server.stats()
    assert stats["model_requests"] == 2
    assert stats["judge_requests"] == stats["malformed_injected"] == rubric_items * (1 + 2)


def test_adaptive_limit_survives_cancelled_waiters() -> None:
    async def go() -> tuple[int, int]:
        limit = AdaptiveLimit(1, SYSTEM_CLOCK.now)
        await limit.acquire()
        waiting = asyncio.create_task(limit.acquire())
        await asyncio.sleep(0)
        waiting.cancel()  # cancelled while queued
        woken = asyncio.create_task(limit.acquire())
        await asyncio.sleep(0)
        limit.release(success=True)  # hands the slot to `woken`...
        woken.cancel()  # ...which is cancelled before it runs: the slot must come back
        await asyncio.gather(waiting, woken, return_exceptions=True)
        await asyncio.wait_for(limit.acquire(), timeout=1)
        return limit.in_use, len(limit.waiters)

    assert asyncio.run(go()) == (1, 0)


def test_builtin_replies_under_injected_faults_are_not_replayed_without_them(tmp_path) -> None:
    from healthbench_exp.config.schema import OfflineServerConfig

    base = make_config("unused", sampling=SamplingConfig(num_examples=4))
    builtin = replace(
        base,
        model=replace(base.model, builtin=True, base_url=None),
        judge=replace(base.judge, builtin=True, base_url=None, max_parse_retries=1),
    )
    builtin = replace(builtin, judge=replace(builtin.judge, early_stop_unparseable=0))
    # every criterion asked: neither stop (the unparseable one, the failure fraction) cuts it
    builtin = replace(builtin, runner=replace(builtin.runner, max_failure_fraction=1.0))
    faulty = run_eval(
        replace(builtin, offline_server=OfflineServerConfig(malformed_rate=1.0)), tmp_path / "a", {}
    )
    assert faulty["counts"]["ungraded_criteria"] == faulty["counts"]["criteria"]
    clean = run_eval(builtin, tmp_path / "b", {})
    assert clean["counts"]["ungraded_criteria"] == 0
    assert clean["counts"]["judge_cache_hits"] == 0
    again = run_eval(builtin, tmp_path / "c", {})
    assert again["counts"]["judge_requests"] == 0  # the same settings are answered from the cache


def test_an_older_cache_file_keeps_its_entries_and_older_versions_can_write(tmp_path) -> None:
    with sqlite3.connect(tmp_path / "responses.sqlite") as db:  # the first version's table
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, prompt_tokens "
            "INTEGER, completion_tokens INTEGER, created REAL)"
        )
        db.execute("INSERT INTO responses VALUES ('old', 'an old reply', 7, 3, 1.0)")
    cache = ResponseCache(tmp_path)
    assert cache.get("old") == CachedReply("an old reply", 7, 3)
    profile = Profile.of("judge", "https://x/v1", {"model": "j", "temperature": 0.5}, None)
    pid = cache.profile(profile)
    reply = CachedReply.of(
        "new",
        {
            "prompt_tokens": 40,
            "completion_tokens": 9,
            "prompt_tokens_details": {"cached_tokens": 8},
            "completion_tokens_details": {"reasoning_tokens": 4},
        },
        160,
    )
    cache.put("new", reply, pid)
    assert cache.get("new", pid) == CachedReply("new", 40, 9, 4, 8, 160)
    assert cache.profile(profile) == pid  # registered once
    cache.close()
    db = open_cache(tmp_path)
    assert db is not None
    found = {g.name: g.entries for g in groups(db)}
    assert found == {"unknown": 1, "j": 1}
    history = profile_history(db, profile)
    assert history is not None and history.replies == 1 and history.tokens_per_char == 0.25
    assert history.cached_share == 0.2 and history.reasoning_tokens == 4
    # the first version's table is as it was: an older harness sharing the file still writes
    columns = [row[1] for row in db.execute("PRAGMA table_info(responses)")]
    assert columns == ["key", "text", "prompt_tokens", "completion_tokens", "created"]
    db.execute("INSERT OR REPLACE INTO responses VALUES ('older', 'x', 1, 1, 2.0)")
    (run,) = last_runs(db)  # the lookups above: 2 hits, of 2
    assert (run.hits, run.misses) == (2, 0)

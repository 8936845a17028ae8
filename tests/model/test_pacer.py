"""Rate limits, an exhausted quota and a silent endpoint, end to end against the built-in server;
and the parts that read a 429 and format OpenAI's headers."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from healthbench_exp.builtin_endpoint.limits import AccountLimits
from healthbench_exp.config.schema import OfflineServerConfig
from healthbench_exp.model.pacer import EndpointPacer, Ticket, classify_429
from healthbench_exp.model.pacer.pace import MIN_RATE
from healthbench_exp.model.pacer.refusals import wait_from_429
from healthbench_exp.model.pacer.server_waits import parse_duration
from healthbench_exp.model.pacer.tickets import TicketError
from healthbench_exp.model.stall import stall_notices
from healthbench_exp.testing.fake_clock import FakeClock
from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled")
HALF_DEMO = (*DEMO, "sampling.num_examples=12")


def summary_of(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def test_a_rate_limited_judge_grades_every_criterion_and_scores_the_same(tmp_path) -> None:
    free = run_cli(*HALF_DEMO, f"hydra.run.dir={tmp_path / 'free'}")
    assert free.returncode == 0, free.stderr
    # the judge's account: 5 requests and 15,000 tokens (prompt + max_tokens, about 3,000 a
    # judge call) a second; the model is not limited. With 300 ms per reply, the first judge
    # calls go out before any reply has told the limits: those beyond the first 5 are refused
    # (429) and waited out; then the headers pace the rest
    limited = run_cli(
        *HALF_DEMO,
        "offline_server.latency_ms=300",
        "offline_server.rate_limit_requests=5",
        "offline_server.rate_limit_tokens=15000",
        "offline_server.rate_limit_window_s=1",
        "offline_server.limited_role=judge",
        f"hydra.run.dir={tmp_path / 'limited'}",
        env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache-limited")},  # nothing replayed
    )
    assert limited.returncode == 0, limited.stderr
    expected, got = summary_of(tmp_path / "free"), summary_of(tmp_path / "limited")
    counts = got["counts"]
    assert counts["rate_limited"]["judge"] > 0 and counts["rate_limited"]["model"] == 0
    assert counts["criteria_graded"] == counts["criteria"] == expected["counts"]["criteria"]
    assert counts["ungraded_criteria"] == 0 and counts["rows_scored"] == counts["rows"]
    assert counts["judge_requests"] == expected["counts"]["judge_requests"]  # paid once each
    assert got["metrics"] == expected["metrics"]  # the same score, to the last digit
    assert json.loads((tmp_path / "limited" / "status.json").read_text())["status"] == "completed"
    output = limited.stdout + limited.stderr
    assert "judge endpoint rate-limited (HTTP 429): waiting" in output
    # the progress line, the limits per minute as a provider states them (5 a second: 300)
    assert "rate-limited judge: " in limited.stderr
    assert "limit 300 requests/min, limit 900,000 tokens/min" in limited.stderr


def test_an_exhausted_quota_stops_the_run_with_one_line_and_it_resumes(tmp_path) -> None:
    run_dir = tmp_path / "run"
    result = run_cli(
        *HALF_DEMO,
        "offline_server.quota_exhausted=true",
        "offline_server.limited_role=judge",
        "runner.progress=false",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    assert "judge endpoint" in errors[0] and "insufficient_quota" in errors[0]
    assert errors[0].endswith(f"then finish with: python -m healthbench_exp resume={run_dir}")
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "failed" and "insufficient_quota" in status["error"]
    # with credit added, the resume command finishes it; the model replies were kept (in the
    # rows the stop recorded `not run`: the resume grades them without asking the model again)
    resumed = run_cli(f"resume={run_dir}", "offline_server.quota_exhausted=false")
    assert resumed.returncode == 0, resumed.stderr
    counts = summary_of(run_dir)["counts"]
    assert counts["model_requests"] == 0 and counts["model_cache_hits"] == 0
    assert counts["criteria_graded"] == counts["criteria"]


def test_a_silent_endpoint_is_reported_within_the_notice_time_and_the_run_ends(
    tmp_path,
) -> None:
    result = run_cli(
        *DEMO,
        "offline_server.silent=true",
        "offline_server.limited_role=model",
        "runner.request_timeout_s=2",
        "runner.stall_notice_s=1",
        "runner.max_retries=0",
        f"hydra.run.dir={tmp_path}",
        timeout=60,  # it ends; it does not hang (else TimeoutExpired)
    )
    output = result.stdout + result.stderr
    assert "no reply from the model endpoint http://127.0.0.1:" in output
    # as many as the first burst holds before any reply has told the limits (FIRST_BURST_TOKENS:
    # 30,000 tokens, about 12 requests of 2,048 completion tokens), or more
    waiting = [int(n) for n in re.findall(r"; (\d+) requests waiting", output)]
    assert waiting and all(10 <= n <= 24 for n in waiting), waiting
    log = (tmp_path / "healthbench.log").read_text()
    notice = next(line for line in log.splitlines() if "no reply from the model" in line)
    silent_s = int(notice.split(" for ")[1].split(" s;")[0])
    assert 1 <= silent_s <= 2  # the first notice came about 1 s into the silence
    assert result.returncode == 3  # every row failed (timed out): a failed run
    summary = summary_of(tmp_path)
    assert summary["counts"]["rows_failed"] == 24
    assert all("APITimeoutError" in f["error"] for f in summary["failures"])


@pytest.mark.parametrize(
    "override",
    ["runner.request_timeout_s=0", "runner.request_timeout_s=-1", "runner.connect_timeout_s=0"],
)
def test_timeouts_must_be_positive(override: str, tmp_path) -> None:
    result = run_cli(*DEMO, "dry_run=true", override, f"hydra.run.dir={tmp_path}")
    assert result.returncode == 2
    key, value = override.split("=")
    assert f"error: {key} must be > 0, got {float(value)}" in result.stderr
    assert "Traceback" not in result.stderr


def test_dry_run_turns_configured_and_probed_limits_into_an_expected_duration(tmp_path) -> None:
    result = run_cli(
        *DEMO,
        "dry_run=true",
        "judge.rate_limit.requests_per_minute=53",  # configured: it wins over the headers
        "judge.rate_limit.probe=true",  # the tokens limit is read from one request's headers
        "offline_server.rate_limit_requests=1000",  # per minute, as the headers report it
        "offline_server.rate_limit_tokens=1000000",
        f"hydra.run.dir={tmp_path}",
    )
    assert result.returncode == 0, result.stderr
    assert "Dry run: one request to the judge endpoint to read its rate limits" in result.stdout
    estimate = json.loads((tmp_path / "estimate.json").read_text())
    duration = estimate["rate_limited_duration"]
    calls = estimate["judge"]["calls"] - estimate["judge"]["cached_calls"]
    assert calls == 106 and "model" not in duration
    assert duration["judge"]["requests_per_minute"] == 53
    assert duration["judge"]["tokens_per_minute"] == 1_000_000
    # 106 calls at 53 a minute: 2 minutes; their tokens (~3,000 each) at 1M a minute: ~20 s
    assert duration["judge"]["seconds"] == duration["seconds"] == pytest.approx(120.0)
    tokens = estimate["judge"]["prompt_tokens"] + calls * 2048  # judge.max_tokens is reserved
    assert duration["judge"]["tokens"] == tokens
    assert "judge rate limits: at least 2.0 min (106 requests at 53/min;" in result.stdout
    assert "expected duration at the known rate limits: at least 2.0 min" in result.stdout


def test_a_429_says_how_long_to_wait_in_several_ways() -> None:
    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("1m0s") == 60.0 and parse_duration("6m0.5s") == 360.5
    assert parse_duration("1h2m3s") == 3723.0 and parse_duration("later") is None
    assert wait_from_429({"retry-after-ms": "1500", "retry-after": "9"}, "", None) == 1.5
    assert wait_from_429({"retry-after": "3"}, "", None) == 3.0
    message = "Rate limit reached for gpt-4.1 on tokens per min (TPM). Please try again in 1.2s."
    assert wait_from_429({}, message, "tokens") == pytest.approx(1.2)
    assert wait_from_429({}, "Please try again in 20ms. Visit ...", None) == pytest.approx(0.02)
    resets = {
        "x-ratelimit-reset-requests": "6s",
        "x-ratelimit-reset-tokens": "1m0s",
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-remaining-tokens": "12000",
    }
    assert wait_from_429(resets, "", None) == 6.0  # the exhausted limit's reset
    assert wait_from_429(resets, "", "tokens") == 60.0  # the one the error names
    assert wait_from_429({}, "", None) == 1.0  # said nothing: a second
    too_large = {"error": {"message": "Request too large for gpt-4o on tokens per min"}}
    assert classify_429({}, too_large).too_large
    quota = {"error": {"message": "You exceeded your current quota", "code": "insufficient_quota"}}
    assert classify_429({}, quota).quota and not classify_429({}, too_large).quota


class _Silent:
    role, url, timeout_s = "judge", "http://judge.example/v1", 180.0

    def __init__(self, silent: float | None, waiting: int) -> None:
        self.silent = silent
        self.stats = type("Stats", (), {"in_flight": waiting})()

    def silent_for(self, now: float) -> float | None:
        return self.silent


def test_stall_notices_name_the_endpoint_and_repeat_while_silent() -> None:
    endpoint, noticed = _Silent(31.0, 7), {}
    (notice,) = stall_notices([endpoint], 30.0, noticed, now=100.0)
    assert "judge endpoint http://judge.example/v1 for 31 s; 7 requests waiting" in notice
    assert stall_notices([endpoint], 30.0, noticed, now=110.0) == []  # not again so soon
    assert len(stall_notices([endpoint], 30.0, noticed, now=130.0)) == 1
    endpoint.silent = None  # replies came: reported afresh next time
    assert stall_notices([endpoint], 30.0, noticed, now=131.0) == [] and not noticed


async def turn(pacer: EndpointPacer) -> float:
    """Wait for a request's turn; its start time (its cost goes back: it is never sent)."""
    ticket = await pacer.start(0.0)
    pacer.buckets.ended(ticket)
    return ticket.started_at


def test_the_pacer_pauses_every_request_and_a_burst_cuts_the_pace_once() -> None:
    """On a fake clock: unpaced requests start at once; a burst of 429s pauses the endpoint
    for the longest wait and cuts the pace once; the held-back requests then start in the
    order they came, spaced by the pace, which has climbed since the cut; a 429 to a request
    started after the cut cuts it again."""

    async def scenario() -> None:
        fake = FakeClock()
        pacer = EndpointPacer("judge", clock=fake.clock)
        started = [await turn(pacer) for _ in range(5)]  # unpaced: at once
        assert started == [fake.now()] * 5 and pacer.describe() == ""
        for _ in range(4):
            pacer.succeeded()
        pacer.rate_limited(0.2, started[0])  # the first refusal of a burst sets the pace
        pace = pacer.base_rate
        assert pace is not None and pace >= MIN_RATE
        pacer.rate_limited(0.3, started[1])  # same burst: the pause grows, the pace stays
        assert pacer.base_rate == pace
        assert "rate-limited judge: waiting 1s (0 queued), pace" in pacer.describe()
        before = fake.now()
        waiting = asyncio.gather(*(turn(pacer) for _ in range(3)))
        await fake.advance(0.3 - 0.001)
        assert not waiting.done()  # nobody starts during the pause
        await fake.advance(10.0)
        turns = await waiting
        assert turns[0] == pytest.approx(before + 0.3)  # at the pause's end, to the tick
        assert sorted(turns) == turns  # in the order they came, spaced by the pace
        assert turns[2] - turns[1] == pytest.approx(1 / pacer.rate(turns[1]))
        climbed = pacer.rate(fake.now())
        assert climbed is not None and climbed > pace  # back up since the cut
        pacer.rate_limited(0.0, turns[0])  # sent after the cut and refused: cut again
        assert pacer.rate(fake.now()) < climbed

    asyncio.run(scenario())


def test_the_pacer_learns_the_limits_from_the_headers_and_is_seldom_refused() -> None:
    """Against the built-in server's own token bucket (30,000 tokens a second, full at the
    start), with each reply's headers read five requests late (as replies come back while
    others are in flight), a request started every millisecond the pacer allows for 1.5 fake
    seconds: about none refused, and the limit used."""
    fake = FakeClock()
    limits = AccountLimits(
        OfflineServerConfig(rate_limit_tokens=30_000, rate_limit_window_s=1), fake.now
    )

    async def scenario() -> tuple[int, int]:
        pacer, in_flight, refused, sent = EndpointPacer("judge", clock=fake.clock), [], 0, 0
        began = fake.now()
        while fake.now() - began < 1.5:
            mark = await pacer.start(3_000)
            pacer.buckets.sending(mark)
            headers, refusal = limits.admit("judge", 3_000)
            refused += refusal is not None
            sent += 1
            in_flight.append((headers, mark))
            if len(in_flight) > 5:
                pacer.buckets.learn(*in_flight.pop(0))
            await fake.sleep(0.001)
        return refused, sent

    async def driven() -> tuple[int, int]:
        task = asyncio.ensure_future(scenario())
        while not task.done():
            await fake.advance(0.001)
        return await task

    refused, sent = asyncio.run(driven())
    admitted = limits.admitted["limited_tokens"]
    assert refused <= 0.02 * sent, (refused, sent)  # the first six before any headers were read
    assert admitted >= 0.9 * (30_000 + 30_000 * 1.5), admitted


def test_requests_that_wait_for_a_slot_after_their_start_are_not_refused() -> None:
    """Requests started through the pacer first wait 0.3 s for a slot (as under the in-flight
    caps while a run starts) before they reach the server, whose bucket refills meanwhile, then
    none waits: their marks are taken again when they are sent, so the copy never counts that
    refill twice and runs ahead of the server once the waits end (a mark from the start did:
    9 of these 74 were refused). On a fake clock, in steps of a millisecond: the same on a
    loaded machine (on the wall clock, a busy event loop sent fewer, later, and it failed)."""
    fake = FakeClock()
    limits = AccountLimits(
        OfflineServerConfig(rate_limit_tokens=30_000, rate_limit_window_s=1), fake.now
    )

    async def scenario() -> tuple[int, int]:
        pacer = EndpointPacer("judge", clock=fake.clock)
        queued: list[tuple[float, Ticket]] = []
        in_flight: list[tuple[dict[str, str], Ticket]] = []
        refused = sent = 0
        first = await pacer.start(1_000)  # one reply tells the limits
        pacer.buckets.sending(first)
        pacer.buckets.learn(limits.admit("judge", 1_000)[0], first)
        began = fake.now()
        while fake.now() - began < 1.5:
            mark = await pacer.start(1_000)
            queued.append((fake.now(), mark))
            lag = 0.3 if fake.now() - began < 0.6 else 0.0  # then slots are free
            while queued and fake.now() - queued[0][0] >= lag:  # its slot came
                _, waited = queued.pop(0)
                pacer.buckets.sending(waited)
                headers, refusal = limits.admit("judge", 1_000)
                refused += refusal is not None
                sent += 1
                in_flight.append((headers, waited))
            while len(in_flight) > 5:
                pacer.buckets.learn(*in_flight.pop(0))
            await fake.sleep(0.001)
        return refused, sent

    async def driven() -> tuple[int, int]:
        task = asyncio.ensure_future(scenario())
        while not task.done():
            await fake.advance(0.001)
        return await task

    refused, sent = asyncio.run(driven())
    assert refused <= 0.02 * sent, (refused, sent)
    assert sent > 50, (refused, sent)


def test_a_request_never_sent_gives_its_cost_back() -> None:
    buckets = EndpointPacer("judge", clock=FakeClock().clock).buckets
    before = dict(buckets.level)
    mark = buckets.take(500.0)
    buckets.ended(mark)
    with pytest.raises(TicketError, match="a returned ticket cannot become returned"):
        buckets.ended(mark)  # once only
    with pytest.raises(TicketError, match="a returned ticket cannot become sent"):
        buckets.sending(mark)
    with pytest.raises(TicketError, match="a returned ticket cannot become answered"):
        buckets.learn({}, mark)
    assert buckets.level == before and buckets.pending == {"requests": 0.0, "tokens": 0.0}
    sent = buckets.take(500.0)
    buckets.sending(sent)
    with pytest.raises(TicketError, match="a sent ticket cannot become sent"):
        buckets.sending(sent)  # sent twice
    buckets.ended(sent)  # sent: its cost stays taken
    assert buckets.level["tokens"] == before["tokens"] - 500.0
    with pytest.raises(TicketError, match="an unanswered ticket cannot become answered"):
        buckets.learn({}, sent)


def test_the_progress_line_gives_limits_per_minute_as_the_provider_states_them() -> None:
    """A first-tier key's 30,000 tokens a minute reads so, not "3e+04 tokens/s"."""
    pacer = EndpointPacer("judge", clock=FakeClock().clock)
    pacer.buckets.stated(30_000, 500)
    pacer.base_rate = 1.0
    line = pacer.describe()
    assert "limit 30,000 tokens/min" in line and "limit 500 requests/min" in line, line

"""The dry run warns when a run would take more than a day at the stated rate limits, and names
the ways out with their time and cost (engine/long_run.py), through the printout itself. The
figures are computed by hand in the comments."""

from __future__ import annotations

import json
from pathlib import Path

from healthbench_exp.engine.estimate_text import format_estimate
from healthbench_exp.engine.long_run import DAY_S, long_run_lines
from tests.e2e.test_e2e import run_cli
from tests.engine.test_estimate_text import estimate

# HealthBench Hard at a first-tier limit, twice over: 24,000 judge calls of 3,500 reserved tokens
# at 30,000 tokens a minute: 60 x 84,000,000 / 30,000 = 168,000 s = 46.7 h
JUDGE_S = 60.0 * 24_000 * 3_500 / 30_000
HOUR_S = 3600.0


def duration(seconds: float, calls: int) -> dict[str, object]:
    return {
        "seconds": seconds,
        "requests": calls,
        "tokens": calls * 3_500,
        "requests_per_minute": None,
        "tokens_per_minute": 30_000,
    }


def limited(judge_s: float, model_s: float | None = None) -> dict[str, object]:
    """An estimate whose judge (and model, when `model_s` is given) is rate limited; the judge
    costs $40 of the $50 in all."""
    plain = estimate()
    durations = {"judge": duration(judge_s, 24_000)}
    if model_s is not None:
        durations["model"] = duration(model_s, 2_000)
    return {
        **plain,
        "judge": {**plain["judge"], "calls": 24_000, "cost_usd": 40.0},  # type: ignore[dict-item]
        "total_cost_usd": 50.0,
        "rate_limited_duration": {
            **durations,
            "seconds": max(judge_s, model_s or 0.0),
        },
    }


def test_a_run_of_more_than_a_day_at_the_stated_limits_names_the_ways_out() -> None:
    text = format_estimate(limited(JUDGE_S), Path("/runs/x"))
    assert "judge rate limits: at least 46.7 h (~84,000,000 tokens at 30,000/min)" in text
    assert "warning: at the stated rate limits this run takes at least 46.7 h; ways out:" in text
    # the Batch API: only the judge is limited, so its batch is the rest of the run; the judge
    # at half price: $40 / 2 = $20 less, $50 - $20 = $30 in all
    assert (
        "judge.batch=true (the Batch API): the judge outside the per-minute limits, done within "
        "24.0 h of the model's last reply; ~$30.00 in all, ~$20.00 less (the judge at half "
        "price)" in text
    )
    assert (
        "judge.service_tier=flex: ~$30.00 in all, ~$20.00 less (the judge at half price), still "
        "at least 46.7 h (the same limits)" in text
    )
    assert "about 3.1 h at that limit, ~$50.00 as now" in text  # 46.7 h / 15


def test_a_batched_judge_does_not_shorten_the_models_own_time() -> None:
    """The judge and the model each 40 h at their limits: batching the judge leaves the model's
    40 h, then up to 24 h for the judge's batch: not within a day."""
    text = format_estimate(limited(40 * HOUR_S, model_s=40 * HOUR_S), Path("/runs/x"))
    assert "this run takes at least 40.0 h; ways out:" in text
    assert "done within 24.0 h of the model's last reply" not in text
    assert (
        "judge.batch=true (the Batch API): the judge outside the per-minute limits, but the "
        "model's calls (not batched) still take at least 40.0 h, the judge's batch done within "
        "24.0 h after them; ~$30.00 in all, ~$20.00 less (the judge at half price)" in text
    )


def test_the_slowest_other_role_is_named_and_the_saving_is_the_judges_half() -> None:
    lines = long_run_lines({"model": 3 * DAY_S, "judge": DAY_S / 2, "gpt-5.4": DAY_S}, 7.0, 9.0)
    assert lines[0].endswith("takes at least 3.0 days; ways out:")
    # the model (3 days) is slower than the jury member (1 day); $7 / 2 = $3.50 less, $5.50
    assert "but the model's calls (not batched) still take at least 3.0 days" in lines[1]
    assert lines[1].endswith("~$5.50 in all, ~$3.50 less (the judge at half price)")
    jury = long_run_lines({"judge": 2 * DAY_S, "gpt-5.4": 1.5 * DAY_S}, 7.0, None)
    assert "but gpt-5.4's calls (not batched) still take at least 36.0 h" in jury[1]
    assert jury[1].endswith("; ~$3.50 less (the judge at half price)")  # no total: the saving


def test_a_run_of_a_day_or_less_gets_no_warning() -> None:
    assert "warning:" not in format_estimate(limited(DAY_S), Path("/runs/x"))
    assert long_run_lines({"judge": DAY_S, "model": DAY_S}, 1.0, 2.0) == []
    assert long_run_lines({}, 1.0, 2.0) == []
    lines = long_run_lines({"model": 3 * DAY_S, "judge": DAY_S / 2}, None, None)
    assert lines[1].endswith("the judge's batch done within 24.0 h after them; at a price not "
                             "configured (the judge at half price)")  # fmt: skip
    assert "at a price not configured as now" in lines[3]


def test_a_judge_batched_already_has_no_per_minute_limit_and_is_not_offered_batch(
    tmp_path: Path,
) -> None:
    """`judge.batch=true` with the judge's limit stated: the Batch API is outside the per-minute
    limits, so the dry run gives the judge no least time and offers neither the Batch API nor
    flex again (it halved the judge's price a second time); the same run unbatched is warned."""
    args = ("experiment=demo", "wandb=disabled", "dry_run=true",
            "judge.rate_limit.tokens_per_minute=100")  # fmt: skip
    env = {"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}
    plain = run_cli(*args, f"hydra.run.dir={tmp_path / 'plain'}", env=env)
    assert plain.returncode == 0, plain.stderr[-2000:]
    assert "judge rate limits: at least" in plain.stdout
    assert "judge.batch=true (the Batch API)" in plain.stdout
    batched = run_cli(*args, "judge.batch=true", f"hydra.run.dir={tmp_path / 'b'}", env=env)
    assert batched.returncode == 0, batched.stderr[-2000:]
    assert "judge rate limits" not in batched.stdout and "warning:" not in batched.stdout
    estimate = json.loads((tmp_path / "b" / "estimate.json").read_text())
    assert estimate["rate_limited_duration"] is None and estimate["batched_roles"] == ["judge"]
    # a slow model beside a batched judge: only a higher tier is named
    lines = long_run_lines({"model": 2 * DAY_S}, 4.0, 6.0, judge_batched=True)
    assert lines[0].endswith("at least 2.0 days; the judge is batched already; a way out:")
    assert len(lines) == 2 and lines[1].startswith("    a higher usage tier")

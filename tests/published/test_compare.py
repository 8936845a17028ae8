"""A score beside the published ones: comparable or not, why, and the verdict's noise."""

from __future__ import annotations

import math

from healthbench_exp.published import DataKind, PublishedComparison, RunSide, Verdict, compare
from healthbench_exp.published.compare import default_run_std

GPT41 = "gpt-4.1-2025-04-14"


def paper_run(score: float, **changes: object) -> RunSide:
    """GPT-4.1 on all with the paper's settings (temperature 1.0, GPT-4.1 grader)."""
    settings: dict[str, object] = {
        "model": "gpt-4.1",
        "set": "all",
        "scores": {"overall_score": score},
        "grader": GPT41,
        "temperature": 1.0,
        "max_tokens": 2048,
    }
    settings.update(changes)
    return RunSide(**settings)  # type: ignore[arg-type]


def professional_run(**changes: object) -> RunSide:
    """gpt-5.4 on HealthBench Professional graded as published: by gpt-5.4 at low effort, the
    length-adjusted score 0.48."""
    settings: dict[str, object] = {
        "model": "gpt-5.4",
        "set": "professional",
        "scores": {"length_adjusted_score": 0.48},
        "grader": "gpt-5.4-2026-03-05",
        "grader_effort": "low",
    }
    settings.update(changes)
    return RunSide(**settings)  # type: ignore[arg-type]


def table_7(run: RunSide) -> PublishedComparison:
    """The comparison with the paper's Table 7 row (16-run mean 0.4778, std 0.0022)."""
    (row,) = [c for c in compare(run) if "Table 7" in c.source]
    return row


def test_worked_example_uses_run_to_run_noise_not_the_bootstrap() -> None:
    """docs/reproducing.md's example: 0.4750 is consistent, 0.4700 differs."""
    near, far = table_7(paper_run(0.4750)), table_7(paper_run(0.4700))
    assert near.verdict == Verdict.CONSISTENT.value
    assert far.verdict == Verdict.DIFFERS.value
    # the interval by hand: 1.96 * sqrt(0.0022^2/16 + 0.0022^2 + rounding (0.00005/sqrt 3)^2)
    by_hand = 1.959964 * math.sqrt(0.0022**2 / 16 + 0.0022**2 + (0.00005 / math.sqrt(3)) ** 2)
    assert far.interval is not None and abs(far.interval - by_hand) < 1e-6
    assert abs(far.difference + 0.0078) < 1e-9  # type: ignore[operator]
    # the bootstrap std over examples (about 0.005) would call 0.4700 consistent
    assert abs(far.difference) < 1.96 * 0.005  # type: ignore[arg-type]
    assert "the source's std 0.0022 over 16 runs" in far.noise


def test_aliases_and_prefix_find_the_same_rows() -> None:
    by_alias = compare(paper_run(0.4778))
    by_snapshot = compare(paper_run(0.4778, model=GPT41))
    by_prefix = compare(paper_run(0.4778, model="openai/gpt-4.1"))
    assert [c.source for c in by_alias] == [c.source for c in by_snapshot]
    assert [c.source for c in by_alias] == [c.source for c in by_prefix]
    assert by_alias


def test_unknown_model_has_nothing_published() -> None:
    assert compare(paper_run(0.47, model="gpt-4.1-mini")) == []
    assert compare(paper_run(0.47, model="my-finetune")) == []


def test_a_different_grader_is_not_comparable_and_says_which() -> None:
    row = table_7(paper_run(0.4778, grader="gpt-4o-mini"))
    assert row.verdict == Verdict.NOT_COMPARABLE.value
    assert row.difference is None
    assert f"grader: {GPT41} -> gpt-4o-mini" in row.why


def test_length_policy_must_match() -> None:
    """A length-adjusted score does not compare with the paper's unadjusted one."""
    run = paper_run(0.4778, scores={"length_adjusted_score": 0.45})
    row = table_7(run)
    assert row.verdict == Verdict.NOT_COMPARABLE.value
    assert any(w.startswith("length adjustment") for w in row.why)


def test_other_settings_are_named_beside_the_verdict() -> None:
    row = table_7(paper_run(0.4778, temperature=0.5, max_tokens=8192))
    assert row.verdict == Verdict.CONSISTENT.value
    assert "temperature: 1.0 -> 0.5" in row.why
    assert "max_tokens" in row.not_stated  # the paper does not state it
    assert not any(w.startswith("max_tokens") for w in row.why)


def test_a_seeded_subset_adds_its_finite_population_error() -> None:
    whole = table_7(paper_run(0.47))
    subset = table_7(paper_run(0.47, n_examples=500))
    assert "examples: 5000 -> a seeded subset of 500" in subset.why
    # by hand: run-to-run scaled to 500 examples, plus 0.35^2/500 * 4500/4999
    var = 0.0022**2 / 16 + 0.0022**2 * 10 + 0.35**2 / 500 * 4500 / 4999
    var += (0.00005 / math.sqrt(3)) ** 2
    assert subset.interval is not None and whole.interval is not None
    assert abs(subset.interval - 1.959964 * math.sqrt(var)) < 1e-6
    assert subset.verdict == Verdict.CONSISTENT.value and whole.verdict == Verdict.DIFFERS.value


def test_data_that_is_not_an_official_set_compares_with_nothing() -> None:
    assert compare(paper_run(0.4778, data=DataKind.NOT_OFFICIAL)) == []
    assert compare(paper_run(0.4778, set="sample")) == []
    mirror = table_7(paper_run(0.4778, data=DataKind.MIRROR, data_note="the HF mirror"))
    assert "data: the HF mirror" in mirror.why


def test_a_bridged_score_compares_on_gpt41s_scale_and_says_so() -> None:
    run = paper_run(0.4778, grader="gpt-5.4-2026-03-05", bridged=True, bridged_std=0.004)
    row = table_7(run)
    assert row.verdict == Verdict.CONSISTENT.value
    assert any("bridged score" in w and "scale" in w for w in row.why)
    assert "the bridged score's std 0.0040" in row.noise


def test_the_runs_repeats_give_its_noise_where_the_source_states_none() -> None:
    """The GPT-5 card's o3 re-run states no std: the run's repeats give the run's share."""
    run = RunSide(
        model="o3",
        set="all",
        scores={"overall_score": 0.598},
        grader=GPT41,
        run_to_run_std=0.004,
        rollouts=4,
    )
    rows = [c for c in compare(run) if "GPT-5 System Card" in c.source]
    assert rows  # the card's grader is stated only as presumed: not comparable
    assert all(c.verdict == Verdict.NOT_COMPARABLE.value for c in rows)
    paper = [c for c in compare(run) if "Table 7" in c.source]
    assert paper[0].noise.endswith("the run's from the source's std")
    hard = RunSide(model="o3", set="hard", scores={"overall_score": 0.32}, grader=GPT41)
    (row,) = [c for c in compare(hard) if "arxiv" in (c.url or "")]
    assert f"a default run-to-run std {default_run_std(1000):.4f}" in row.noise
    repeats = RunSide(**{**hard.__dict__, "run_to_run_std": 0.004, "rollouts": 4})
    (row,) = [c for c in compare(repeats) if "arxiv" in (c.url or "")]
    assert "the run's from its 4 repeats (0.0040)" in row.noise


def test_best_matching_first() -> None:
    rows = compare(RunSide(model="o3", set="all", scores={"overall_score": 0.6}, grader=GPT41))
    verdicts = [c.verdict for c in rows]
    assert verdicts[0] != Verdict.NOT_COMPARABLE.value
    assert verdicts == sorted(verdicts, key=lambda v: v == Verdict.NOT_COMPARABLE.value)


def test_the_graders_effort_must_match_where_the_source_states_it() -> None:
    """HealthBench Professional: graded by gpt-5.4 at low effort, length-adjusted."""
    (same,) = compare(professional_run())
    assert same.verdict == Verdict.CONSISTENT.value and same.metric == "length_adjusted_score"
    (other,) = compare(professional_run(grader_effort="medium"))
    assert other.verdict == Verdict.NOT_COMPARABLE.value
    assert other.why == ["grader effort: low -> medium"]


def test_a_length_penalty_other_than_the_published_one_is_not_comparable() -> None:
    (same,) = compare(professional_run(length_penalty=0.0147))
    assert same.verdict == Verdict.CONSISTENT.value
    (other,) = compare(professional_run(length_penalty=0.03))
    assert other.verdict == Verdict.NOT_COMPARABLE.value
    assert other.why == ["length penalty per 500 characters: 0.0147 -> 0.03"]

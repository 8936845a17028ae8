"""An eval's summary from rows taken in as they finish (`tasks.eval_summary.EvalTally`) equals the
one computed from the whole list of results in the run's order: metrics (their order too),
bootstrap stds, repeats, failures, jury rows and calibration counts, whatever order rows end."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from healthbench_exp.config.schema import DatasetConfig, DataSource
from healthbench_exp.core.types import CriterionGrade, Example, ExampleResult
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.grading.comparison import run_to_run_std, worst_at_k
from healthbench_exp.grading.scoring import aggregate_metrics, example_metrics
from healthbench_exp.tasks.eval_summary import EvalTally
from healthbench_exp.tasks.jury import jury_row

MEMBERS = ("judge", "second")


def sample() -> list[Example]:
    return load_examples(DatasetConfig(difficulty="sample", source=DataSource.bundled, sha256=None))


def graded(example: Example, rollout: int, rng: random.Random) -> ExampleResult:
    """A row as `tasks.eval.run_example` makes it: failed, unscorable or scored, with a jury."""
    kind = rng.random()
    if kind < 0.1:
        return ExampleResult(example, rollout, list(example.prompt), None, [], error="model: 500")
    verdicts = [None if kind < 0.2 else rng.random() < 0.5 for _ in example.rubrics]
    grades = [CriterionGrade(v, "why", rng.randint(1, 3)) for v in verdicts]
    second = [CriterionGrade(rng.random() < 0.5, "", 1) for _ in example.rubrics]
    reply = "x" * rng.randint(0, 3000)
    metrics = example_metrics(example.example_tags, example.rubrics, verdicts)
    return ExampleResult(
        example,
        rollout,
        list(example.prompt),
        reply,
        grades,
        metrics=metrics,
        jury={"judge": grades, "second": second},
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_tally_of_rows_in_any_order_is_the_summary_of_the_list(seed: int) -> None:
    rng = random.Random(seed)
    results = [graded(e, r, rng) for r in range(3) for e in sample()]
    tally = EvalTally(len(results), length=True, repeats=True, jury=MEMBERS, clusters=True)
    finished = list(enumerate(results))
    rng.shuffle(finished)  # rows end in any order
    for position, result in finished:
        tally.add(position, result)

    scored = [r for r in results if r.metrics is not None]
    expected = aggregate_metrics([r.metrics for r in scored if r.metrics], 200, seed)
    got = tally.aggregate(200, seed)
    assert got == expected
    assert list(got) == list(expected)  # summary.json's order of the metrics too
    assert [r.score for r in tally.scored_replies()] == [r.score for r in scored]
    assert [r.reply_chars for r in tally.scored_replies()] == [
        len(r.completion or "") for r in scored
    ]
    failures = [(f.prompt_id, f.rollout) for _, f in sorted(tally.failures, key=lambda p: p[0])]
    assert failures == [(r.example.prompt_id, r.rollout) for r in results if r.error is not None]
    assert tally.counts.scored == len(scored)
    assert tally.criteria == sum(len(r.example.rubrics) for r in results)
    assert tally.judge_replies == sum(g.attempts for r in results for g in r.grades)
    assert tally.jury_in_order() == [
        row for r in results if (row := jury_row(r, MEMBERS)) is not None
    ]

    by_example: dict[str, list[float]] = defaultdict(list)
    by_rollout: dict[int, list[float]] = defaultdict(list)
    for r in scored:
        assert r.score is not None
        by_example[r.example.prompt_id].append(r.score)
        by_rollout[r.rollout].append(r.score)
    repeats = tally.repeats_statistics()
    assert repeats.run_to_run_std == run_to_run_std(by_rollout)
    assert repeats.worst_at_k == {
        str(k): v for k, v in worst_at_k(list(by_example.values())).items()
    }

    clusters: dict[str, dict[str, list[int]]] = defaultdict(dict)  # the fold over the list
    for r in results:
        for criterion, grade in zip(r.example.rubrics, r.grades, strict=False):
            if criterion.cluster is not None:
                counts = clusters[f"cluster:{criterion.cluster}"].setdefault(
                    r.example.prompt_id, [0, 0]
                )
                if grade.criteria_met is not None:
                    counts[0] += bool(grade.criteria_met)
                    counts[1] += 1
    assert clusters and tally.jury_rows and tally.failures  # every part is exercised
    got_clusters = tally.clusters_in_order()
    assert got_clusters == clusters
    assert all(list(got_clusters[tag]) == list(clusters[tag]) for tag in clusters)  # in order

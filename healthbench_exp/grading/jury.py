"""A jury's figures (SPEC 7.1): the jury's metrics, each judge's, and every pair's agreement.

API: `jury_section(members, rows, bootstrap_samples, seed, length=None) -> core.summary.Jury`,
one `JuryRow(example_tags, criteria, verdicts, reply_chars)` per scored (example, rollout) row,
`verdicts[i]` = {member name: True | False | None (ungraded)} for `criteria[i]`; pure, no I/O.

- Rule `mean`: a criterion's jury weight is the share of its graded members that said met
  (`jury_weight`); no member graded it: it is ungraded for the jury. The jury's example score is
  SPEC section 3 with `points * weight` for met criteria: `grading.scoring.example_metrics`
  with the weights as verdicts, aggregated by `aggregate_metrics` (clipped mean, bootstrap).
- `by_judge`: each member's metrics from its own verdicts, exactly as a one-judge run computes
  them (`tasks.eval.build_summary`), with `length_adjusted_score` when `length` is given.
- `agreement`: every pair (a, b) in member order: `n` criteria both graded, the share with equal
  verdicts, Cohen's kappa, and the same `by` each `axis:` tag of the criteria and each `theme:`
  tag of the rows. Kappa is None where undefined: no criterion both graded, or both members
  gave one same verdict to every one (chance agreement 1).
- `ungraded`: each member's criteria with no verdict over `rows` (beside SPEC 7.1's shape).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations

from healthbench_exp.core.summary import Jury, JuryPair, PairStats
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.agreement import cohen_agreement
from healthbench_exp.grading.comparison import ScoredReply, length_adjusted_metrics
from healthbench_exp.grading.scoring import aggregate_metrics, example_metrics

MEAN = "mean"  # the one rule: a criterion's weight is the share of graded members that said met
AXIS = "axis:"
THEME = "theme:"

Verdicts = Mapping[str, bool | None]  # member name -> its verdict on one criterion


@dataclass(frozen=True)
class JuryRow:
    """One graded (example, rollout) row: its example tags, its criteria and, index-aligned, each
    criterion's verdicts by member (a member missing from a mapping: ungraded), and the length
    of the graded reply in characters (for `length_adjusted_score`). Pass the rows a one-judge
    run scores: every row with a reply whose criteria were graded (not failed, not `not_run`);
    a row no member can score is left out of that member's (and the jury's) metrics."""

    example_tags: Sequence[str]
    criteria: Sequence[Criterion]
    verdicts: Sequence[Verdicts]
    reply_chars: int = 0

    def __post_init__(self) -> None:
        if len(self.criteria) != len(self.verdicts):
            raise ValueError(
                f"a jury row has {len(self.criteria)} criteria but {len(self.verdicts)} verdicts"
            )


@dataclass(frozen=True)
class LengthSetting:
    """The length penalty a run's `length_adjusted_score` uses (`scoring.length_*`)."""

    per_500_chars: float
    center_chars: int = 2000


def jury_weight(verdicts: Iterable[bool | None]) -> float | None:
    """Rule `mean`: the share of the graded verdicts that are True; None when none is graded."""
    graded = [v for v in verdicts if v is not None]
    if not graded:
        return None
    return sum(graded) / len(graded)


def rows_metrics(
    rows: Sequence[JuryRow],
    verdict: Callable[[Verdicts], bool | float | None],
    bootstrap_samples: int,
    seed: int,
    length: LengthSetting | None = None,
) -> dict[str, float | int]:
    """The metrics of section 3 over `rows` with each criterion's verdict (a bool, a jury weight
    or None) taken from its verdicts by `verdict`, as `tasks.eval.build_summary` computes a run's:
    rows whose score is undefined are left out; `length_adjusted_score` with `length`."""
    scored: list[dict[str, float]] = []
    replies: list[ScoredReply] = []
    for row in rows:
        metrics = example_metrics(
            row.example_tags, row.criteria, [verdict(v) for v in row.verdicts]
        )
        if metrics is None:
            continue
        scored.append(metrics)
        replies.append(ScoredReply(metrics["overall_score"], row.reply_chars, row.example_tags))
    if not scored:
        return {}
    result = aggregate_metrics(scored, bootstrap_samples, seed)
    if length is not None:
        result.update(
            length_adjusted_metrics(
                replies, length.per_500_chars, length.center_chars, bootstrap_samples, seed
            )
        )
    return result


def pair_stats(pairs: Sequence[tuple[bool, bool]]) -> PairStats:
    """Agreement and Cohen's kappa of verdict pairs (a, b) (`grading.agreement.cohen_agreement`:
    kappa = (p_o - p_e) / (1 - p_e), None where p_e is 1)."""
    agreement = cohen_agreement(pairs)
    return PairStats(n=agreement.n, agreement=agreement.agreement, kappa=agreement.kappa)


@dataclass
class _Pairs:
    overall: list[tuple[bool, bool]] = field(default_factory=list)
    by: dict[str, list[tuple[bool, bool]]] = field(default_factory=dict)


def pair_agreement(a: str, b: str, rows: Sequence[JuryRow]) -> JuryPair:
    """Members `a` and `b`'s agreement over the criteria both graded, overall and by each
    `axis:` tag of the criteria and each `theme:` tag of the rows (keys sorted)."""
    pairs = _Pairs()
    for row in rows:
        themes = [t for t in row.example_tags if t.startswith(THEME)]
        for criterion, verdicts in zip(row.criteria, row.verdicts, strict=True):
            va, vb = verdicts.get(a), verdicts.get(b)
            if va is None or vb is None:
                continue
            pairs.overall.append((va, vb))
            for tag in [*(t for t in criterion.tags if t.startswith(AXIS)), *themes]:
                pairs.by.setdefault(tag, []).append((va, vb))
    overall = pair_stats(pairs.overall)
    return JuryPair(
        a=a,
        b=b,
        n=overall.n,
        agreement=overall.agreement,
        kappa=overall.kappa,
        by={tag: pair_stats(pairs.by[tag]) for tag in sorted(pairs.by)},
    )


def jury_section(
    members: Sequence[str],
    rows: Sequence[JuryRow],
    bootstrap_samples: int = 1000,
    seed: int = 0,
    length: LengthSetting | None = None,
) -> Jury:
    """summary.json's `jury` (SPEC 7.1) for `members` (the primary judge first) over `rows`."""
    if len(members) < 2 or len(set(members)) != len(members):
        raise ValueError(f"a jury needs two or more distinct members, got {list(members)}")
    known = set(members)
    for row in rows:
        for verdicts in row.verdicts:
            unknown = set(verdicts) - known
            if unknown:
                raise ValueError(f"verdicts by {sorted(unknown)}, not jury members {list(members)}")

    def weight(verdicts: Verdicts) -> float | None:
        return jury_weight(verdicts.get(name) for name in members)

    def own(name: str) -> Callable[[Verdicts], bool | None]:
        return lambda verdicts: verdicts.get(name)

    return Jury(
        members=list(members),
        rule=MEAN,
        metrics=dict(rows_metrics(rows, weight, bootstrap_samples, seed, length)),
        by_judge={
            name: dict(rows_metrics(rows, own(name), bootstrap_samples, seed, length))
            for name in members
        },
        agreement=[pair_agreement(a, b, rows) for a, b in combinations(members, 2)],
        ungraded={
            name: sum(v.get(name) is None for row in rows for v in row.verdicts) for name in members
        },
    )

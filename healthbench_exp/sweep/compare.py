"""Comparing finished runs pairwise: paired score differences and judge agreement.

- `paired_comparisons`: every pair of completed eval runs on the same examples (the same set,
  by its protocol name, and the same prompt_ids) gets a paired bootstrap of the score difference
  (overall and per theme), over the prompt_ids both scored; every other pair is listed with the
  reason it was not compared (different sets, different examples, or no prompt_id both scored).
- `judge_agreement`: every pair of completed runs whose judges graded the same items (the same
  reply, or meta-eval row, against the same criterion) gets the judges' agreement rate and
  Cohen's kappa over the items both graded.

Both read the runs' JSONL files (examples.jsonl, per_criterion.jsonl, meta_eval.jsonl).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass

from healthbench_exp.core.run_end import Status
from healthbench_exp.grading.agreement import cohen_agreement
from healthbench_exp.grading.comparison import paired_bootstrap
from healthbench_exp.sweep.jobs import Job

BOOTSTRAP_SAMPLES = 1000
SEED = 0


def judge_verdicts(job: Job) -> dict[tuple[object, ...], bool | None]:
    """Each item the job's judge graded -> its verdict (None: ungraded).

    An item is (prompt_id, rollout, criterion, the reply's sha256) for an eval, and (prompt_id,
    completion_id, repeat, rubric) for a meta-eval, so two jobs share an item only when their
    judges saw the same reply and criterion.
    """
    verdicts: dict[tuple[object, ...], bool | None] = {}
    if (job.path / "meta_eval.jsonl").exists():
        with open(job.path / "meta_eval.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                key = ("meta", r["prompt_id"], r["completion_id"], r["repeat"], r["rubric"])
                verdicts[key] = r["criteria_met"]
        return verdicts
    replies: dict[tuple[str, int], str] = {}
    with open(job.path / "examples.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["completion"] is not None:
                digest = hashlib.sha256(r["completion"].encode("utf-8")).hexdigest()
                replies[r["prompt_id"], r["rollout"]] = digest
    with open(job.path / "per_criterion.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            reply = replies.get((r["prompt_id"], r["rollout"]))
            if reply is not None:
                key = ("eval", r["prompt_id"], r["rollout"], r["criterion_id"], reply)
                verdicts[key] = r["criteria_met"]
    return verdicts


def judge_agreement(jobs: list[Job], labels: dict[str, str]) -> list[dict[str, object]]:
    """Agreement rate and Cohen's kappa for every pair of completed jobs with shared items,
    over the items both judges graded."""
    done = [
        j
        for j in jobs
        if j.status == Status.COMPLETED
        and ((j.path / "meta_eval.jsonl").exists() or (j.path / "per_criterion.jsonl").exists())
    ]
    verdicts = {j.name: judge_verdicts(j) for j in done}
    pairs: list[dict[str, object]] = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            va, vb = verdicts[a.name], verdicts[b.name]
            shared = va.keys() & vb.keys()
            if not shared:
                continue
            both = [(x, y) for k in shared if (x := va[k]) is not None and (y := vb[k]) is not None]
            result = cohen_agreement(both)
            judges = [_judge_name(j) for j in (a, b)]
            pairs.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "a_label": labels[a.name],
                    "b_label": labels[b.name],
                    "a_judge": judges[0],
                    "b_judge": judges[1],
                    "shared_items": len(shared),
                    **result.__dict__,
                }
            )
    return pairs


@dataclass(frozen=True)
class JobScores:
    """What a paired comparison reads of one eval job: its set (the protocol name, else the
    dataset's difficulty), every prompt_id it ran, and per scored prompt_id the mean example
    score over its scored rollouts and the theme."""

    examples_set: str | None
    prompt_ids: frozenset[str]
    scores: dict[str, float]
    themes: dict[str, str]


def prompt_scores(job: Job) -> JobScores:
    """The job's `JobScores`, from its examples.jsonl and summary."""
    totals: dict[str, list[float]] = defaultdict(list)
    themes: dict[str, str] = {}
    prompt_ids: set[str] = set()
    with open(job.path / "examples.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            prompt_ids.add(row["prompt_id"])
            if row["score"] is not None:
                totals[row["prompt_id"]].append(row["score"])
                themes[row["prompt_id"]] = row.get("theme") or ""
    return JobScores(
        _examples_set(job),
        frozenset(prompt_ids),
        {p: sum(s) / len(s) for p, s in totals.items()},
        themes,
    )


def _examples_set(job: Job) -> str | None:
    """The set a job ran: its protocol's name, else its dataset's difficulty (older runs)."""
    protocol = job.summary.protocol if job.summary is not None else None
    if protocol is not None and protocol.name is not None:
        return protocol.name
    dataset = job.settings.dataset
    return dataset.difficulty if dataset is not None else None


def not_comparable(a: JobScores, b: JobScores) -> str | None:
    """Why two jobs are not compared pairwise, or None when they ran the same examples."""
    if a.examples_set != b.examples_set:
        return f"different sets ({a.examples_set} vs {b.examples_set})"
    if a.prompt_ids != b.prompt_ids:
        shared = len(a.prompt_ids & b.prompt_ids)
        return (
            f"different examples ({len(a.prompt_ids)} vs {len(b.prompt_ids)} prompt_ids, "
            f"{shared} shared)"
        )
    if not set(a.scores) & set(b.scores):
        return "no prompt_id scored by both"
    return None


def paired_comparisons(
    jobs: list[Job], labels: dict[str, str]
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Paired bootstrap A - B for every pair of completed eval jobs on the same examples; and
    each other pair of them with the reason it was not compared."""
    done = [
        j for j in jobs if j.status == Status.COMPLETED and (j.path / "examples.jsonl").exists()
    ]
    scores = {j.name: prompt_scores(j) for j in done}
    pairs: list[dict[str, object]] = []
    skipped: list[dict[str, object]] = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            ja, jb = scores[a.name], scores[b.name]
            reason = not_comparable(ja, jb)
            if reason is not None:
                skipped.append(
                    {
                        "a": a.name,
                        "b": b.name,
                        "a_label": labels[a.name],
                        "b_label": labels[b.name],
                        "reason": reason,
                    }
                )
                continue
            sa, sb, themes = ja.scores, jb.scores, ja.themes
            overall = paired_bootstrap(sa, sb, BOOTSTRAP_SAMPLES, SEED)
            assert overall is not None, "not_comparable checks a prompt_id both scored"
            by_theme = {}
            for theme in sorted({themes[p] for p in set(sa) & set(sb)} - {""}):
                in_theme = {p for p in sa if themes[p] == theme}
                diff = paired_bootstrap(
                    {p: sa[p] for p in in_theme},
                    {p: sb[p] for p in in_theme if p in sb},
                    BOOTSTRAP_SAMPLES,
                    SEED,
                )
                if diff is not None:
                    by_theme[theme] = diff.record()
            pairs.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "a_label": labels[a.name],
                    "b_label": labels[b.name],
                    "a_overrides": " ".join(a.overrides),
                    "b_overrides": " ".join(b.overrides),
                    **overall.record(),
                    "themes": by_theme,
                }
            )
    return pairs, skipped


def _judge_name(job: Job) -> str | None:
    """The judge's name in the run's resolved config (None: not recorded)."""
    judge = job.summary.settings.judge if job.summary is not None else None
    return judge.name if judge is not None else None

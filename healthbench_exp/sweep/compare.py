"""Comparing finished runs pairwise: paired score differences and judge agreement.

- `pairwise`: every pair of completed eval runs that scored shared prompt_ids gets a paired
  bootstrap of the score difference (overall and per theme), over the prompt_ids both scored.
- `judge_agreement`: every pair of completed runs whose judges graded the same items (the same
  reply, or meta-eval row, against the same criterion) gets the judges' agreement rate and
  Cohen's kappa over the items both graded.

Both read the runs' JSONL files (examples.jsonl, per_criterion.jsonl, meta_eval.jsonl).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from typing import Any

from healthbench_exp.grading.agreement import cohen_agreement
from healthbench_exp.grading.comparison import paired_bootstrap
from healthbench_exp.sweep.jobs import Job

BOOTSTRAP_SAMPLES = 1000
SEED = 0


def judge_verdicts(job: Job) -> dict[tuple[Any, ...], bool | None]:
    """Each item the job's judge graded -> its verdict (None: ungraded).

    An item is (prompt_id, rollout, criterion, the reply's sha256) for an eval, and (prompt_id,
    completion_id, repeat, rubric) for a meta-eval, so two jobs share an item only when their
    judges saw the same reply and criterion.
    """
    verdicts: dict[tuple[Any, ...], bool | None] = {}
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


def judge_agreement(jobs: list[Job], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Agreement rate and Cohen's kappa for every pair of completed jobs with shared items,
    over the items both judges graded."""
    done = [
        j
        for j in jobs
        if j.status == "completed"
        and ((j.path / "meta_eval.jsonl").exists() or (j.path / "per_criterion.jsonl").exists())
    ]
    verdicts = {j.name: judge_verdicts(j) for j in done}
    pairs = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            va, vb = verdicts[a.name], verdicts[b.name]
            shared = va.keys() & vb.keys()
            if not shared:
                continue
            both = [(va[k], vb[k]) for k in shared if va[k] is not None and vb[k] is not None]
            result = cohen_agreement(both)  # type: ignore[arg-type]
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


def prompt_scores(job: Job) -> tuple[dict[str, float], dict[str, str]]:
    """Per prompt_id: the mean example score over its scored rollouts, and its theme."""
    totals: dict[str, list[float]] = defaultdict(list)
    themes: dict[str, str] = {}
    with open(job.path / "examples.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["score"] is not None:
                totals[row["prompt_id"]].append(row["score"])
                themes[row["prompt_id"]] = row["theme"]
    return {p: sum(s) / len(s) for p, s in totals.items()}, themes


def pairwise(jobs: list[Job], labels: dict[str, str]) -> list[dict[str, Any]]:
    """Paired bootstrap A - B for every pair of completed jobs with shared prompt_ids."""
    done = [j for j in jobs if j.status == "completed" and (j.path / "examples.jsonl").exists()]
    scores = {j.name: prompt_scores(j) for j in done}
    pairs = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            (sa, themes), (sb, _) = scores[a.name], scores[b.name]
            overall = paired_bootstrap(sa, sb, BOOTSTRAP_SAMPLES, SEED)
            if overall is None:
                continue
            by_theme = {}
            for theme in sorted({themes[p] for p in set(sa) & set(sb)}):
                in_theme = {p for p in sa if themes[p] == theme}
                diff = paired_bootstrap(
                    {p: sa[p] for p in in_theme},
                    {p: sb[p] for p in in_theme if p in sb},
                    BOOTSTRAP_SAMPLES,
                    SEED,
                )
                if diff is not None:
                    by_theme[theme] = diff.__dict__
            pairs.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "a_label": labels[a.name],
                    "b_label": labels[b.name],
                    "a_overrides": " ".join(a.overrides),
                    "b_overrides": " ".join(b.overrides),
                    **overall.__dict__,
                    "themes": by_theme,
                }
            )
    return pairs


def _judge_name(job: Job) -> Any:
    """The judge's name in the run's resolved config (None: not recorded)."""
    config = job.summary.config if job.summary is not None else {}
    return (config.get("judge") or {}).get("name")

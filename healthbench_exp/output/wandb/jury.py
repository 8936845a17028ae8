"""A jury run in W&B (summary.json's `jury`, SPEC 7.1; `grading.jury`).

- `jury_metrics`: the run summary's `jury/...` entries: `jury/members` (comma-joined, the
  primary judge first), `jury/rule`, the jury's metrics as `jury/<metric>`, each judge's as
  `jury/by_judge/<judge>/<metric>`, and each pair's agreement as
  `jury/agreement/<a>~<b>/{n,agreement,kappa}` and `.../<axis:x|theme:y>/{n,agreement,kappa}`
  (undefined values left out; a `/` in a judge's name becomes `_`).
- `verdict_members`, `verdict_columns`, `verdict_cells`: the per_criterion table's (a
  meta-eval's per_row table's) column per judge (`verdict:<judge>`: true, false or empty for
  ungraded) when its rows carry `verdicts`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from healthbench_exp.core.summary import PairStats, RunSummary

Value = float | int | str


def _key(name: str) -> str:
    return name.replace("/", "_")


def _pair_metrics(base: str, stats: PairStats) -> dict[str, Value]:
    values = {"n": stats.n, "agreement": stats.agreement, "kappa": stats.kappa}
    return {f"{base}/{k}": v for k, v in values.items() if v is not None}


def jury_metrics(summary: RunSummary) -> dict[str, Value]:
    """The `jury/...` summary entries of a jury run (see the module docstring); {} otherwise."""
    jury = summary.jury
    if jury is None:
        return {}
    out: dict[str, Value] = {"jury/members": ", ".join(jury.members), "jury/rule": jury.rule}
    out.update({f"jury/{k}": v for k, v in jury.metrics.items() if v is not None})
    for name, metrics in jury.by_judge.items():
        prefix = f"jury/by_judge/{_key(name)}"
        out.update({f"{prefix}/{k}": v for k, v in metrics.items() if v is not None})
    for pair in jury.agreement:
        base = f"jury/agreement/{_key(pair.a)}~{_key(pair.b)}"
        out.update(_pair_metrics(base, PairStats(pair.n, pair.agreement, pair.kappa)))
        for tag, stats in pair.by.items():
            out.update(_pair_metrics(f"{base}/{tag}", stats))
    return out


def verdict_members(per_criterion: Path) -> list[str]:
    """The judges of the first per_criterion.jsonl (or meta_eval.jsonl) row's `verdicts`
    (primary first); [] for a run graded by one judge (or an empty file)."""
    with open(per_criterion, encoding="utf-8") as f:
        first = f.readline()
    if not first.strip():
        return []
    verdicts = json.loads(first).get("verdicts") or {}
    return list(verdicts)


def verdict_columns(members: list[str]) -> list[str]:
    return [f"verdict:{name}" for name in members]


def verdict_cells(row: Mapping[str, object], members: list[str]) -> list[bool | None]:
    """One per_criterion row's verdict by each judge (None: ungraded, or not recorded)."""
    verdicts = row.get("verdicts")
    if not isinstance(verdicts, dict):
        return [None] * len(members)
    return [verdicts.get(name) for name in members]

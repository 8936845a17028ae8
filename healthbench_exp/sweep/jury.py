"""A jury run in a comparison (summary.json's `jury`, SPEC 7.1): the columns of its job row
(`jury_score`: the jury's overall score, `jury_std`, `jury_members`) and its markdown cell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.core.summary import RunSummary

OVERALL = "overall_score"


def jury_columns(summary: RunSummary) -> dict[str, object]:
    """A job row's jury columns; {} for a run graded by one judge."""
    jury = summary.jury
    if jury is None:
        return {}
    return {
        "jury_score": jury.metrics.get(OVERALL),
        "jury_std": jury.metrics.get(f"{OVERALL}:bootstrap_std"),
        "jury_members": ", ".join(jury.members),
    }


def has_jury(rows: Sequence[Mapping[str, object]]) -> bool:
    """Whether any job of the comparison was graded by a jury (the table gains its column)."""
    return any(r.get("jury_members") for r in rows)


def jury_cell(row: Mapping[str, object]) -> str | None:
    """`0.5123 ± 0.0210 (3 judges)`; None for a job without a jury score."""
    score, std = row.get("jury_score"), row.get("jury_std")
    if not isinstance(score, float | int):
        return None
    judges = len(str(row.get("jury_members") or "").split(", "))
    spread = f" ± {std:.4f}" if isinstance(std, float | int) else ""
    return f"{score:.4f}{spread} ({judges} judges)"

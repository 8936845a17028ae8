"""A bridged run in a comparison (summary.json's `bridged`, docs/bridge.md): the columns of its
job row (`bridged_score` with `bridged_ci_low` / `bridged_ci_high`, `bridged_method`,
`bridged_holdout_error`, `bridged_sources`) and its markdown cell, beside the job's own
score."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.core.summary import RunSummary

OVERALL = "bridged_score"


def bridged_columns(summary: RunSummary) -> dict[str, object]:
    """A job row's bridge columns; {} for a run without `bridge.runs`."""
    bridged = summary.bridged
    if bridged is None:
        return {}
    interval = bridged.ci.get(OVERALL)
    return {
        "bridged_score": bridged.metrics.get(OVERALL),
        "bridged_ci_low": interval[0] if interval else None,
        "bridged_ci_high": interval[1] if interval else None,
        "bridged_method": bridged.method,
        "bridged_holdout_error": bridged.holdout_error.mean,
        "bridged_sources": len(bridged.bridge),
    }


def has_bridged(rows: Sequence[Mapping[str, object]]) -> bool:
    """Whether any job of the comparison was bridged (the table gains its column)."""
    return any(r.get("bridged_sources") for r in rows)


def bridged_cell(row: Mapping[str, object]) -> str | None:
    """`label_shift: 0.4099 [0.3627, 0.4574]` (the method, then the score and its interval);
    None for a job without a bridged score."""
    score, low, high = (
        row.get("bridged_score"),
        row.get("bridged_ci_low"),
        row.get("bridged_ci_high"),
    )
    if not isinstance(score, float | int):
        return None
    method = row.get("bridged_method")
    shown = f"{score:.4f}" if method is None else f"{method}: {score:.4f}"
    if isinstance(low, float | int) and isinstance(high, float | int):
        return f"{shown} [{low:.4f}, {high:.4f}]"
    return shown

"""The bridged score in text: the end-of-run table's lines and the sweep summary's cell
(summary.json's `bridged`, docs/bridge.md), beside the run's own score, never instead of it."""

from __future__ import annotations

from healthbench_exp.core.bridged import Bridged, LeaveOneOut

OVERALL = "bridged_score"


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def bridged_cell(bridged: Bridged | None) -> str:
    """`0.4099 [0.3627, 0.4574]`: the bridged score and its 95% interval; "" without a bridge."""
    if bridged is None:
        return ""
    interval = bridged.ci.get(OVERALL)
    shown = _number(bridged.metrics.get(OVERALL))
    return shown if interval is None else f"{shown} [{interval[0]:.4f}, {interval[1]:.4f}]"


def transport_text(t: LeaveOneOut) -> str | None:
    """A source left out: `bridged from the others 0.8065 [0.7604, 0.8441], own 0.7910, error
    +0.0155 (inside the interval)`; None where it was not scored (refused, or no interval)."""
    if t.bridged is None or t.ci is None or t.own is None or t.error is None:
        return None
    inside = "inside" if t.ci[0] <= t.own <= t.ci[1] else "OUTSIDE"
    return (
        f"bridged from the others {t.bridged:.4f} [{t.ci[0]:.4f}, {t.ci[1]:.4f}], "
        f"own {t.own:.4f}, error {t.error:+.4f} ({inside} the interval)"
    )


def bridged_lines(bridged: Bridged | None) -> list[str]:
    """The end-of-run table's lines: the bridged score with its method and interval, the
    bridge, the held-out check, each source left out (several sources) and every warning."""
    if bridged is None:
        return []
    holdout = bridged.holdout_error
    check = (
        f"held-out error {holdout.mean:+.4f} [{holdout.ci[0]:+.4f}, {holdout.ci[1]:+.4f}] "
        f"({holdout.folds}-fold, {holdout.examples} bridge examples)"
        if holdout.mean is not None and holdout.ci is not None
        else "no held-out check (no bridge example scored)"
    )
    lines = [
        f"  bridged_score ({bridged.method}, on {bridged.old_judge}'s scale, not a reference "
        f"metric): {bridged_cell(bridged)}",
        f"    bridge: {bridged.pairs} criteria graded by both {bridged.old_judge} and "
        f"{bridged.new_judge} in {len(bridged.bridge)} run(s); {check}",
    ]
    for t in bridged.transport or []:
        text = transport_text(t)
        if t.method == bridged.method and text is not None:
            lines.append(f"    leave one model out: {t.model} ({t.source}): {text}")
    lines += [f"    note: {warning}" for warning in bridged.warnings]
    return lines

"""The bridged score in a W&B run's summary (summary.json's `bridged`, docs/bridge.md)."""

from __future__ import annotations

from healthbench_exp.core.bridged import Bridged

PREFIX = "bridged/"


def bridged_metrics(bridged: Bridged | None) -> dict[str, object]:
    """`bridged/<metric>` (`bridged/bridged_score`, `bridged/bridged:<tag>`) with
    `.../ci_low` and `.../ci_high`, `bridged/method`, `bridged/pairs`, `bridged/holdout_error`
    and its interval, `bridged/sources`; defined values only; {} without a bridge."""
    if bridged is None:
        return {}
    out: dict[str, object] = {
        f"{PREFIX}method": bridged.method,
        f"{PREFIX}pairs": bridged.pairs,
        f"{PREFIX}sources": len(bridged.bridge),
        f"{PREFIX}old_judge": bridged.old_judge,
    }
    for name, value in bridged.metrics.items():
        if value is None:
            continue
        out[f"{PREFIX}{name}"] = value
        interval = bridged.ci.get(name)
        if interval is not None:
            out[f"{PREFIX}{name}/ci_low"], out[f"{PREFIX}{name}/ci_high"] = interval
    holdout = bridged.holdout_error
    if holdout.mean is not None:
        out[f"{PREFIX}holdout_error"] = holdout.mean
    if holdout.ci is not None:
        out[f"{PREFIX}holdout_error/ci_low"], out[f"{PREFIX}holdout_error/ci_high"] = holdout.ci
    if bridged.spread is not None:
        out[f"{PREFIX}spread_beyond_interval"] = sum(c.beyond_interval for c in bridged.spread)
    return out

"""summary.json's `bridged` of an eval run with `bridge.runs` (`grading.bridge`, docs/bridge.md):
the run's rows, graded by its judge, rescored through its bridge sources, with the intervals and
the k-fold check on the bridge's own examples; with several sources, how the quantity the method
holds fixed varies between them, and each source left out (`transport`). The run's own metrics
stay its judge's; the protocol records the bridge as a deviation."""

from __future__ import annotations

from collections.abc import Sequence

from healthbench_exp.config.protocol import REFERENCE_JUDGE
from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core.bridged import (
    BridgeCheck,
    Bridged,
    LeaveOneOut,
    RareVerdict,
    SpreadCell,
)
from healthbench_exp.grading.bridge import (
    ESTIMATORS,
    BridgeRefused,
    RunRow,
    bridge_run,
    holdout_error,
    leave_one_out,
    rare_by_source,
    rare_verdicts,
    spread,
)
from healthbench_exp.tasks.bridge_source import KEY, BridgeSource, all_pairs


def bridged(
    rows: Sequence[RunRow],
    sources: Sequence[BridgeSource],
    new_judge: str,
    samples: int,
    seed: int,
    method: str,
) -> Bridged:
    """The `bridged` record of the run's scored `rows` through `method` (see the module
    docstring); ConfigError (one line) where the estimator refuses the bridge."""
    pairs = all_pairs(sources)
    estimator = ESTIMATORS[method]
    try:
        result = bridge_run(rows, pairs, samples, seed, estimator)
    except BridgeRefused as exc:
        raise ConfigError(f"{KEY}: {exc}") from None
    paths = [s.path for s in sources]
    cells = (
        spread(pairs, result.cells, result.rate_draws, paths, estimator.by_old)
        if len(sources) > 1
        else None
    )
    warnings = []
    pooled = [s for s in result.strata if s.pooled]
    if pooled:
        warnings.append(estimator.pooling_note(len(pooled)))
    rare = rare_verdicts(result.strata)
    if rare:
        warnings.append(rare_note(rare))
    beyond = [c for c in cells or [] if c.beyond_interval]
    if beyond:
        warnings.append(estimator.varies_note(beyond[0], len(beyond)))
    moved = transport_of(sources, samples, seed)
    missed = [
        t
        for t in moved
        if t.method == method and t.own is not None and t.ci and not t.ci[0] <= t.own <= t.ci[1]
    ]
    if missed:
        warnings.append(
            f"leave one model out: the bridge from the other sources misses the reference "
            f"grader's own score on {missed[0].model}'s replies ({missed[0].source}) by "
            f"{missed[0].error:+.4f}, outside its interval: the models differ where {method} "
            "assumes they do not"
        )
    return Bridged(
        method=method,
        bridge=paths,
        old_judge=REFERENCE_JUDGE,
        new_judge=new_judge,
        pairs=len(pairs),
        strata=result.strata,
        metrics=result.metrics,
        ci={name: None if i is None else i.as_list() for name, i in result.ci.items()},
        holdout_error=holdout_error(pairs, result.cells, estimator, samples, seed),
        spread=cells,
        transport=moved or None,
        warnings=warnings,
        revision=estimator.revision,
    )


def transport_of(sources: Sequence[BridgeSource], samples: int, seed: int) -> list[LeaveOneOut]:
    """Each source left out, through each method (`grading.bridge.leave_one_out`); [] for one."""
    paths = [s.path for s in sources]
    return [
        LeaveOneOut(
            paths[t.source],
            sources[t.source].model,
            t.method,
            t.own,
            t.bridged,
            None if t.bridged is None or t.own is None else t.bridged - t.own,
            None if t.ci is None else t.ci.as_list(),
            t.refused,
        )
        for t in leave_one_out(all_pairs(sources), len(sources), ESTIMATORS, samples, seed)
    ]


def bridge_check(
    sources: Sequence[BridgeSource], new_judge: str, samples: int, seed: int
) -> BridgeCheck:
    """The checks of a bridge of several sources before any run uses it (the bridge kit's
    `bridge_check.json`): each source left out through each method, and per method the spread
    of what it holds fixed between the sources (its refusal instead, where it refuses)."""
    pairs = all_pairs(sources)
    paths = [s.path for s in sources]
    spreads: dict[str, list[SpreadCell]] = {}
    refusals: dict[str, str] = {}
    for method, estimator in ESTIMATORS.items():
        try:
            result = bridge_run([], pairs, samples, seed, estimator)
        except BridgeRefused as exc:
            refusals[method] = str(exc)
            continue
        spreads[method] = spread(pairs, result.cells, result.rate_draws, paths, estimator.by_old)
    models = [s.model for s in sources]
    return BridgeCheck(
        paths,
        models,
        REFERENCE_JUDGE,
        new_judge,
        len(pairs),
        transport_of(sources, samples, seed),
        spreads,
        refusals,
        rare_by_source(pairs, models),
    )


def rare_note(rare: Sequence[RareVerdict]) -> str:
    """One line naming the strata whose rare verdict the run gives far more often than the
    bridge did (`grading.bridge.rare`)."""
    named = "; ".join(
        f"{r.stratum} {r.sign} {r.verdict} ({r.bridge_n} pairs, {r.bridge_share:.3f} in the "
        f"bridge, {r.run_share:.3f} in the run)"
        for r in rare
    )
    return (
        f"the reference grader's rare verdict in {len(rare)} strata is far more common in the "
        f"run than in the bridge: {named}; each rests on its sign's pooled rate there (its "
        "bridged:<tag> figure can be off by 0.05-0.08) and needs more bridge replies of that kind"
    )

"""The text a run prints at its end: the results table of an eval or of a meta-eval, with the
usage and cost of every endpoint and the budget's verdict, all read from its `RunSummary`."""

from __future__ import annotations

from collections.abc import Mapping

from healthbench_exp.core.intervals import normal_interval
from healthbench_exp.core.protocol_record import OVERALL_SCORE
from healthbench_exp.core.summary import Calibrated, Metrics, RunSummary, Usage
from healthbench_exp.grading.scoring import EXAMPLE_TAG_KINDS, slice_names
from healthbench_exp.output.bridged_text import bridged_lines
from healthbench_exp.output.run_context import protocol_label
from healthbench_exp.published.text import summary_lines


def _ci(metrics: Metrics, name: str) -> str:
    mean, std = metrics[name], metrics[f"{name}:bootstrap_std"]
    if mean is None or std is None:
        return _value(mean)
    low, high = normal_interval(mean, std).as_list()
    return f"{mean:.4f}  [{low:.4f}, {high:.4f}]  n={metrics[f'{name}:n_samples']}"


def _value(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def _dollars(value: float | None) -> str:
    return "unknown (no price configured)" if value is None else f"${value:.4f}"


def illustrative_note(roles: list[str]) -> str:
    """What a cost from illustrative prices (`roles`' prices) says after it; "" when none."""
    if not roles:
        return ""
    return (
        f" (illustrative {' and '.join(roles)} price{'s' * (len(roles) > 1)}, not a provider's "
        "bill; see price.as_of)"
    )


def format_usage(usage: Usage, ungraded: Mapping[str, int] | None = None) -> str:
    """One line per role and the total, for the end-of-run table; a cost from an illustrative
    price says so; a jury member's line says its ungraded criteria (`ungraded`, by name)."""
    lines = []
    illustrative = usage.illustrative_roles()
    jury = usage.jury or {}
    for role in ("model", "judge", *jury):
        u = jury[role] if role in jury else usage.role(role)
        if not u.requests and not u.cache_hits:
            continue
        if role in jury:
            left = "" if ungraded is None else f", {ungraded.get(role, 0)} ungraded"
            role = f"jury {role} ({u.requests} requests{left})"  # a further judge's own line
        reasoning = f", {u.reasoning_tokens} reasoning" if u.reasoning_tokens else ""
        lines.append(
            f"  {role} tokens: {u.prompt_tokens} prompt ({u.cached_prompt_tokens} cached by "
            f"the provider), {u.completion_tokens} completion{reasoning}; "
            f"cost {_dollars(u.cost_usd)}" + (" (illustrative price)" * (role in illustrative))
        )
        if u.cache_hits:
            lines.append(
                f"    + {u.cache_hits} calls replayed from the response cache, not billed "
                f"again ({u.replayed_prompt_tokens} prompt, "
                f"{u.replayed_completion_tokens} completion tokens)"
            )
    total = usage.total_cost_usd
    lines.append(
        f"  total cost {_dollars(total)}" + (illustrative_note(illustrative) if total else "")
    )
    if abandoned := usage.abandoned():  # sent, never answered (a stop): maybe billed
        estimate = usage.abandoned_cost_usd
        about = "an unknown sum" if estimate is None else f"about ${estimate:.4f}"
        lines.append(
            f"    + {about} for {abandoned} request{'s' * (abandoned != 1)} abandoned in flight "
            "(estimated: sent, never answered)"
        )
    return "\n".join(lines)


def _interval(metrics: Mapping[str, float | int | None], name: str) -> str:
    """`name`'s value with its 95% interval (`:ci_low`, `:ci_high`) when it has one."""
    low, high = metrics.get(f"{name}:ci_low"), metrics.get(f"{name}:ci_high")
    interval = "" if low is None or high is None else f" [{low:.4f}, {high:.4f}]"
    value = metrics.get(name)
    return f"{_value(None if value is None else float(value))}{interval}"


# the meta-eval's figures, each described once: (metric, who, how it is averaged)
META_FIGURES = (
    (
        "pairwise_model_f1_balanced",
        "judge",
        "pooled, the score (pairwise_model_f1_balanced): one F1 over every (judge, physician) pair",
    ),
    (
        "criterion_mean:pairwise_model_f1_balanced",
        "judge",
        "each category's F1, then the mean over categories (the paper's figure)",
    ),
    (
        "physicians_mean:pairwise_physician_f1_balanced",
        "physicians",
        "pooled: each physician's F1 over all rows, then the mean over physicians",
    ),
    (
        "physicians_weighted_mean:pairwise_physician_f1_balanced",
        "physicians",
        "pooled: each physician's F1 over all rows, then the mean weighted by their pairs",
    ),
    (
        "criterion_mean:pairwise_physician_f1_balanced",
        "physicians",
        "per category the mean over physicians, then over categories (the paper's figure)",
    ),
    (
        "category_mean:physicians_weighted_mean:pairwise_physician_f1_balanced",
        "physicians",
        "per category the pair-weighted mean over physicians, then over categories",
    ),
)


def meta_figure_lines(metrics: Metrics, physicians: int) -> list[str]:
    """The judge's figures and the physicians', one line each, each saying how it averages
    (a physician: its labels against the other physicians' on the same rows); a figure with a
    bootstrap interval shows it."""
    lines = []
    for name, who, how in META_FIGURES:
        extra = ""
        if name == "pairwise_model_f1_balanced":
            extra = (
                f"; pos F1 {_value(metrics.get('pairwise_model_f1_pos'))}, "
                f"neg F1 {_value(metrics.get('pairwise_model_f1_neg'))}"
            )
        elif who == "physicians" and name.startswith("physicians_mean"):
            extra = f"; {physicians} physicians"
        lines.append(f"  {who:<10}  {_interval(metrics, name)}  ({how}{extra})")
    return lines


def format_meta_report(summary: RunSummary) -> str:
    """The end-of-run table of a meta-eval: judge vs physicians, overall and by category."""
    metrics, counts = summary.metrics, summary.meta_counts
    lines = [
        "",
        "HealthBench meta-eval: agreement with physicians (balanced F1 of met / not met; a "
        "physician's: against the other physicians on the same rows)",
        *meta_figure_lines(metrics, counts.physicians),
    ]
    if summary.jury is not None:  # a jury: each member's figures, as the judge's are computed
        for name in summary.jury.members:
            mine = summary.jury.by_judge[name]
            lines.append(
                f"  jury member {name}: criterion mean "
                f"{_interval(mine, 'criterion_mean:pairwise_model_f1_balanced')}, pooled "
                f"{_interval(mine, 'pairwise_model_f1_balanced')}; "
                f"{summary.jury.ungraded.get(name, 0)} ungraded"
            )
    rows = summary.by_category or []
    names = [row.category.removeprefix("cluster:") for row in rows]
    width = max([len(name) for name in names] + [len("by category:") - 2])  # never cut
    lines.append(f"  {'by category:':<{width + 2}}      judge  physicians   rows")
    for name, row in zip(names, rows, strict=True):
        lines.append(
            f"    {name:<{width}}  {_value(row.model_f1_balanced):>9}  "
            f"{_value(row.physicians_weighted_mean_f1_balanced):>10}  {row.rows:>5}"
        )
    lines.append(
        f"  rows graded {counts.rows_graded}/{counts.rows}, ungraded {counts.rows_failed}"
        f"; judge requests {counts.judge_requests} (from the cache: "
        f"{counts.judge_cache_hits}); wall time {counts.wall_time_s:.1f} s"
    )
    if counts.rows_failed:
        lines.append("  ungraded rows are left out of the judge's metrics (see meta_eval.jsonl)")
    lines += _cost_lines(summary)
    return "\n".join(lines)


def calibrated_lines(calibrated: Calibrated | None) -> list[str]:
    """An eval with `calibration.meta_eval_run`: how many consensus categories were corrected,
    each corrected rate with its interval, and where every category's figures are."""
    if calibrated is None:
        return []
    rows = calibrated.criteria
    corrected = [c for c in rows if c.corrected is not None]
    lines = [
        f"  calibrated consensus rates (Rogan-Gladen; judge {calibrated.judge} against the "
        f"physicians of {calibrated.meta_eval_run}; beside the scores, never instead): "
        f"{len(corrected)} of {len(rows)} categories corrected"
        + (f", {len(rows) - len(corrected)} not (n_pos or n_neg < 20, or Se + Sp - 1 <= 0.1)"
           if len(corrected) < len(rows) else "")
        + "; every category in report.html and summary.json (calibrated)"
    ]  # fmt: skip
    width = max([len(c.category.removeprefix("cluster:")) for c in corrected] or [0])
    for c in corrected:
        lines.append(
            f"    {c.category.removeprefix('cluster:'):<{width}}  observed {_value(c.observed)}"
            f" -> corrected {_value(c.corrected)} [{_value(c.ci_low)}, {_value(c.ci_high)}]"
        )
    return lines


def _cost_lines(summary: RunSummary) -> list[str]:
    """Usage and cost per endpoint over every invocation of the run, each invocation's cost
    when there were several, and the budget's verdict if one was set."""
    usage = summary.usage
    assert usage is not None and summary.counts is not None, "a finished run's summary"
    lines = [format_usage(usage, summary.jury.ungraded if summary.jury else None)]
    invocations = usage.invocations or []
    if len(invocations) > 1:
        costs = ", ".join(
            f"#{i.invocation} "
            + ("unknown" if i.total_cost_usd is None else f"${i.total_cost_usd:.4f}")
            for i in invocations
        )
        lines.append(f"  over {len(invocations)} invocations of this run: {costs}")
    budget = summary.budget
    if budget and budget.stopped:
        lines.append(
            f"  PARTIAL RUN: {budget.cap_text()} reached after spending "
            f"${budget.spent_usd:.4f} in this invocation; {summary.counts.rows_not_run} "
            f"of {summary.counts.rows} rows not run (resume to finish them; finished "
            "calls are not paid again)"
        )
    elif budget:
        lines.append(
            f"  budget: ${budget.spent_usd:.4f} spent in this invocation ({budget.cap_text()})"
            if budget.sweep_wide
            else f"  budget: ${budget.spent_usd:.4f} of ${budget.binding()[1]:g} spent in this "
            "invocation"
        )
    return lines


def score_lines(metrics: Metrics, headline: str) -> list[str]:
    """The headline metric first (marked), `overall_score` after it when it is not the
    headline; then each example-tag slice of the headline metric, and the rubric axes."""
    lines = [f"  {headline:<22} {_ci(metrics, headline)}   (headline)"]
    if headline != OVERALL_SCORE:
        lines.append(f"  {OVERALL_SCORE:<22} {_ci(metrics, OVERALL_SCORE)}")
    elif "length_adjusted_score" in metrics:  # the set's published penalty (SPEC 7.4)
        lines.append(f"  {'length_adjusted_score':<22} {_ci(metrics, 'length_adjusted_score')}")
    of_headline = "" if headline == OVERALL_SCORE else f"{headline}:"
    for kind in (*EXAMPLE_TAG_KINDS, "axis:"):
        prefix = kind if kind == "axis:" else of_headline + kind
        names = slice_names(metrics, prefix)
        if names:
            which = f" ({headline})" if prefix != kind else ""
            lines.append(f"  by {kind[:-1]}{which}:")
            width = max(22, *(len(n) - len(prefix) for n in names))
            lines.extend(f"    {n[len(prefix) :]:<{width}} {_ci(metrics, n)}" for n in names)
    return lines


def format_report(summary: RunSummary) -> str:
    """The end-of-run table: overall score with a 95% CI, by theme, by axis, counts."""
    if summary.is_meta_eval:
        return format_meta_report(summary)
    metrics, counts = summary.metrics, summary.eval_counts
    lines = [
        "",
        "HealthBench results (mean clipped to [0, 1]; 95% CI = mean +- 1.96 bootstrap std)",
    ]
    if summary.demo:
        lines.append("  DEMO: the built-in offline endpoint answered; these scores mean nothing")
    if summary.partial:
        lines.append(
            f"  PARTIAL: {counts.rows_scored} of {counts.rows} examples scored "
            f"({counts.rows_not_run} not run, {counts.rows_failed} failed, "
            f"{counts.ungraded_criteria} of {counts.criteria} criteria ungraded); the scores "
            "cover the scored examples only, not the run"
        )
    lines.append(f"  protocol: {protocol_label(summary)}")
    if "overall_score" in metrics:
        scores = score_lines(metrics, summary.headline or OVERALL_SCORE)
        # the headline, then each published number of the model and set beside it
        lines += scores[:1] + summary_lines(summary.published, summary.published_note)
        lines += scores[1:]
    else:
        lines.append("  no example could be scored")
    unscorable = counts.rows_unscorable or 0  # None: a summary from before it was counted
    lines.append(
        f"  rows scored {counts.rows_scored}/{counts.rows}, failed {counts.rows_failed}, "
        + (f"unscorable {unscorable}, " if unscorable else "")
        + f"not run {counts.rows_not_run}; "
        f"ungraded criteria {counts.ungraded_criteria}/{counts.criteria}"
    )
    several = len((summary.usage.invocations if summary.usage else None) or []) > 1
    lines.append(
        f"  requests{' this invocation' if several else ''}: model {counts.model_requests}, "
        f"judge {counts.judge_requests} "
        f"(from the cache, not paid again: model {counts.model_cache_hits}, "
        f"judge {counts.judge_cache_hits}); wall time {counts.wall_time_s:.1f} s"
    )
    if summary.failures:
        first = summary.failures[0]
        lines.append(f"  first failure: {first.prompt_id} rollout {first.rollout}: {first.error}")
    if counts.ungraded_criteria:
        lines.append(
            "  ungraded criteria are left out of the scores (see per_criterion.jsonl, error column)"
        )
    if summary.jury is not None:  # SPEC 7.1: beside the judge's metrics
        jury = summary.jury
        judges = ", ".join(
            f"{name} {_value(jury.by_judge[name].get(OVERALL_SCORE))} "
            f"({jury.ungraded.get(name, 0)} ungraded)"
            for name in jury.members
        )
        lines.append(
            f"  jury ({jury.rule} of {len(jury.members)} judges): overall_score "
            f"{_value(jury.metrics.get(OVERALL_SCORE))}; by judge: {judges}"
        )
    lines += bridged_lines(summary.bridged)  # the judge's run on the reference grader's scale
    lines += calibrated_lines(summary.calibrated)
    lines += _cost_lines(summary)
    return "\n".join(lines)

"""How a finished run ends: its `status.json` status, exit code and the line that says why.

A run is `completed` (exit 0) only when it scored something and neither its failed rows nor its
ungraded criteria pass `runner.max_failure_fraction`. Otherwise:

- `failed`, exit 3: more than that share of the rows failed (no usable reply), or nothing was
  scored and rows failed;
- `ungraded`, exit 5: more than that share of the criteria sent to the judge got no valid
  verdict, or nothing was scored for that reason (a run stopped early by
  `judge.early_stop_unparseable` also ends `ungraded`, see `verdict_watch`).

Exit 2 (configuration or data error) and 4 (`budget.max_usd` reached) are decided elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.run_end import Exit, Status
from healthbench_exp.core.summary import RunSummary


def verdicts_of(kind: str) -> str:
    """What gets a verdict in a run of task `kind` ("eval" | "meta_eval"), as its lines say:
    an eval's criteria, or a meta-eval's rows (each row is one criterion, graded once)."""
    return "rows" if kind == "meta_eval" else "criteria"


@dataclass(frozen=True)
class Tally:
    """What a finished run's outcome depends on, the same for both tasks."""

    rows: int  # rows (example x rollout, or meta-eval row x repeat) to run
    rows_scored: int  # rows that got a score (meta-eval: a judge verdict)
    rows_failed: int  # rows with no usable reply, so nothing to grade (eval only)
    criteria_judged: int  # criteria sent to the judge that finished, graded or not
    criteria_ungraded: int  # of those, the ones with no valid verdict
    # what the endpoints answered the calls that failed for good, by role and kind:
    # `judge: InternalServerError 66` (empty: none, or not known)
    failed_calls: str = ""
    verdicts: str = "criteria"  # what a verdict is given to, as lines say it (`verdicts_of`)

    @classmethod
    def of(cls, summary: RunSummary) -> Tally:
        """From a run's summary: `counts` of an eval, or of a meta-eval (one criterion a row)."""
        if summary.is_meta_eval:
            meta = summary.meta_counts
            ungraded = meta.rows_failed  # a meta-eval row fails only for want of a verdict
            return cls(
                rows=meta.rows,
                rows_scored=meta.rows_graded,
                rows_failed=0,
                criteria_judged=meta.rows_graded + ungraded,
                criteria_ungraded=ungraded,
                verdicts=verdicts_of("meta_eval"),
            )
        counts = summary.eval_counts
        return cls(
            rows=counts.rows,
            rows_scored=counts.rows_scored,
            rows_failed=counts.rows_failed,
            criteria_judged=counts.criteria_graded + counts.ungraded_criteria,
            criteria_ungraded=counts.ungraded_criteria,
            failed_calls=failed_calls_text(summary),
        )

    @classmethod
    def of_counts(cls, counts: RunCounts, kind: str = "eval") -> Tally:
        """From the running counts of the rows finished so far of a run of task `kind` (either
        task: a meta-eval row never fails, its ungraded criterion is its row's)."""
        return cls(
            rows=counts.rows,
            rows_scored=counts.scored,
            rows_failed=counts.failed,
            criteria_judged=counts.criteria_graded + counts.ungraded_criteria,
            criteria_ungraded=counts.ungraded_criteria,
            verdicts=verdicts_of(kind),
        )


def failed_calls_text(summary: RunSummary) -> str:
    """`the judge endpoint <url> answered: InternalServerError 66; ...`: each role's calls that
    failed for good, by kind (from `counts.request_errors`), most first."""
    errors = getattr(summary.counts, "request_errors", None) or {}
    parts = []
    for role, kinds in errors.items():
        if not kinds:
            continue
        endpoint = summary.config.get(role) if isinstance(summary.config, dict) else None
        url = endpoint.get("base_url") if isinstance(endpoint, dict) else None
        counted = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items(), key=lambda kv: -kv[1]))
        parts.append(f"the {role} endpoint{f' {url}' if url else ''} answered: {counted}")
    return "; ".join(parts)


@dataclass(frozen=True)
class Outcome:
    status: Status  # completed | failed | ungraded
    exit_code: Exit
    message: str | None  # why it is not `completed`: one line


def _share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def over(part: int, whole: int, max_failure_fraction: float) -> bool:
    """Whether `part` failures of `whole` are more than `max_failure_fraction` of them (the
    rule `run_outcome` holds failed rows and ungraded criteria to; 1.0: never)."""
    return part > 0 and _share(part, whole) > max_failure_fraction


def certainly_over(tally: Tally, criteria: int, max_failure_fraction: float) -> str:
    """While a run goes on: why its end is certain to be over `max_failure_fraction` by
    `run_outcome`'s rule, whatever its rows not yet finished give ('' while it is not).

    `tally`: the rows finished so far; `criteria`: every criterion the run's rows send to the
    judge. Failed rows only grow and the rows are fixed; ungraded criteria only grow and the
    criteria judged at the end are at most `criteria`: so `over` against those bounds now is
    `over` at the end."""
    if over(tally.rows_failed, tally.rows, max_failure_fraction):
        return failed_rows_text(tally)
    if over(tally.criteria_ungraded, max(criteria, tally.criteria_judged), max_failure_fraction):
        return ungraded_text(tally, criteria)
    return ""


def failed_rows_text(tally: Tally) -> str:
    """`2 of all 6 rows failed`: the rows of `tally` that failed, of all the run's rows."""
    return f"{tally.rows_failed} of all {tally.rows} rows failed"


def ungraded_text(tally: Tally, criteria: int) -> str:
    """`5 of all 106 criteria got no valid verdict` (a meta-eval: `rows`): of `criteria`, every
    one the run's rows send to the judge."""
    every = max(criteria, tally.criteria_judged)
    return f"{tally.criteria_ungraded} of all {every} {tally.verdicts} got no valid verdict"


def run_outcome(tally: Tally, max_failure_fraction: float, output_dir: object) -> Outcome:
    """The status, exit code and reason of a run that finished (not stopped by its budget).

    Failed rows and ungraded criteria are each held against `max_failure_fraction` (failed rows
    as a share of rows, ungraded criteria as a share of the criteria sent to the judge); a run
    that scored nothing never counts as completed, whatever the threshold.
    """
    failed_share = _share(tally.rows_failed, tally.rows)
    ungraded_share = _share(tally.criteria_ungraded, tally.criteria_judged)
    nothing_scored = not tally.rows_scored
    rows_over = over(tally.rows_failed, tally.rows, max_failure_fraction) or (
        tally.rows_failed > 0 and nothing_scored
    )
    criteria_over = over(tally.criteria_ungraded, tally.criteria_judged, max_failure_fraction) or (
        tally.criteria_ungraded > 0 and nothing_scored
    )
    if not (rows_over or criteria_over or nothing_scored):
        return Outcome(Status.COMPLETED, Exit.COMPLETED, None)
    reasons = []
    if rows_over:
        reasons.append(f"{tally.rows_failed} of {tally.rows} rows failed ({failed_share:.1%})")
    if criteria_over:
        reasons.append(
            f"{tally.criteria_ungraded} of {tally.criteria_judged} {tally.verdicts} got no valid "
            f"verdict from the judge ({ungraded_share:.1%})"
        )
    why = "; ".join(reasons) or "nothing was graded"
    if nothing_scored:
        message = f"no example could be scored: {why}; details in {output_dir}"
    else:
        message = (
            f"{why}, more than runner.max_failure_fraction={max_failure_fraction}; the "
            f"others are scored in {output_dir}"
        )
    if tally.failed_calls:  # which endpoint, what it answered; then how to finish (last)
        message += (
            f" ({tally.failed_calls}). Once fixed, finish with: "
            f"python -m healthbench_exp resume={output_dir}"
        )
    if rows_over or not criteria_over:  # rows that failed outright weigh more than ungraded
        return Outcome(Status.FAILED, Exit.FAILED, message)
    return Outcome(Status.UNGRADED, Exit.UNGRADED, message)

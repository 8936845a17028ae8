"""The failure-fraction stop: a run halts as soon as its end is certain to be over
`runner.max_failure_fraction`, and pays nothing more.

After each row finishes, its running counts are held to `core.outcome.certainly_over` (the
rule `run_outcome` applies at the end, against what the rows not yet finished could still
give): more rows failed than that share of the run's rows, or more criteria got no valid
verdict than that share of every criterion of the run's rows. Once it is certain, the run's
`Halt` is set, as for a dead endpoint or the budget: no row starts and no request is sent to
any endpoint after it (calls already in flight end as they will); the rows not finished are
recorded `not run`, so a resume finishes them. The run then ends `failed` or `ungraded` as
`run_outcome` says, with the line `raise_if_over_fraction` gives. `1.0` never stops a run.
"""

from __future__ import annotations

from pathlib import Path

from healthbench_exp.core.counts import RunCounts
from healthbench_exp.core.outcome import (
    Tally,
    certainly_over,
    failed_rows_text,
    over,
    run_outcome,
    ungraded_text,
)
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine.stops import FailureShareExceeded, resume_hint, spent_text
from healthbench_exp.model.health import EndpointHealth, Halt
from healthbench_exp.model.roles import JUDGE, MODEL


class FractionStop:
    """Watches one run's counts as its rows finish; halts the run once its failures are certain
    to pass `max_failure_fraction` (`reason` then says why, as it stood at the stop; empty while
    they are not). The run's last line says it with the run's final counts (`final_reason`)."""

    def __init__(
        self,
        criteria: int,
        max_failure_fraction: float,
        halt: Halt,
        healths: dict[str, EndpointHealth],
        kind: str = "eval",
    ) -> None:
        self.criteria = criteria  # every criterion the run's rows send to the judge
        self.max_failure_fraction = max_failure_fraction
        self.halt = halt
        self.healths = healths
        self.kind = kind  # the task's: "eval" | "meta_eval" (`core.outcome.verdicts_of`)
        self.reason = ""
        self.role = ""  # whose failures stopped it: MODEL (failed rows) or JUDGE (verdicts)
        self.at_stop = 0  # how many rows had failed (or verdicts were missing) at the stop

    def after_row(self, counts: RunCounts) -> None:
        """Check the counts once a row is counted in; halt the run if its end is now certain
        to be over (not when it is halted already: the budget or a dead endpoint says why)."""
        if self.reason or self.halt.reason:
            return
        tally = Tally.of_counts(counts, self.kind)
        why = certainly_over(tally, self.criteria, self.max_failure_fraction)
        if not why:
            return
        rows_over = over(tally.rows_failed, tally.rows, self.max_failure_fraction)
        self.role = MODEL if rows_over else JUDGE
        self.at_stop = tally.rows_failed if rows_over else tally.criteria_ungraded
        self.reason = f"{why}, {self._whatever_the_rest()}; {self._endpoint()}"
        self.halt.stop(f"stopped by the failure fraction: {self.reason}")

    def final_reason(self, final: Tally) -> str:
        """Why the run stopped, with its counts once the rows in flight at the stop were
        recorded (`final`: the run's end; they may have failed too): `2 of all 6 rows failed,
        more than ... whatever the rest gives (1 when the run stopped, 1 more from the rows then
        in flight)`, and what the endpoint answered over the whole run."""
        if self.role == MODEL:
            why, count = failed_rows_text(final), final.rows_failed
        else:
            why, count = ungraded_text(final, self.criteria), final.criteria_ungraded
        why = f"{why}, {self._whatever_the_rest()}"
        if count > self.at_stop:
            more = count - self.at_stop
            why += (
                f" ({self.at_stop} when the run stopped, {more} more from the rows then in flight)"
            )
        return f"{why}; {self._endpoint()}"

    def _whatever_the_rest(self) -> str:
        fraction = self.max_failure_fraction
        return f"more than runner.max_failure_fraction={fraction} of them whatever the rest gives"

    def _endpoint(self) -> str:
        """What the endpoint whose failures stopped the run answered over the run so far."""
        health = self.healths.get(self.role)
        if health is not None:
            return f"the {self.role} endpoint {health.url} answered {health.answered_in_run()}"
        if self.role == MODEL:  # no model endpoint opened: the replies come from completions=
            return (
                "no model endpoint was called: the failed rows have no reply in the "
                "completions source (completions.source; examples.jsonl gives each one's error)"
            )
        return f"the {self.role} endpoint's answers failed"


def raise_if_over_fraction(
    stop: FractionStop, output_dir: Path, summary: RunSummary, max_failure_fraction: float
) -> None:
    """Raise `FailureShareExceeded` if `stop` halted the run and rows were left `not run`: the
    status and exit code are `run_outcome`'s, the line says why (with the run's final counts:
    the rows in flight at the stop are recorded by now), what was spent and not run, and ends
    with the resume command. (Certain only as the last rows finished, nothing was cut: the run
    ends as any other, `run_outcome`'s line.)"""
    not_run = summary.counts.rows_not_run if summary.counts is not None else 0
    if not stop.reason or not not_run:  # nothing was left to stop: the run's own end says it
        return
    final = Tally.of(summary)
    outcome = run_outcome(final, max_failure_fraction, output_dir)
    if outcome.status == Status.COMPLETED:  # (cannot be: the stop is taken only when certain)
        return
    raise FailureShareExceeded(
        f"stopped early: {stop.final_reason(final)}; {spent_text(summary)}what finished is "
        f"recorded, the rest is not run. Once fixed, finish with: {resume_hint(output_dir)}",
        outcome.status,
        outcome.exit_code,
    )

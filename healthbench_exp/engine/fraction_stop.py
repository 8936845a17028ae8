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
from healthbench_exp.core.outcome import Tally, certainly_over, over, run_outcome
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.engine.stops import FailureShareExceeded, resume_hint, spent_text
from healthbench_exp.model.health import EndpointHealth, Halt
from healthbench_exp.model.roles import JUDGE, MODEL


class FractionStop:
    """Watches one run's counts as its rows finish; halts the run once its failures are certain
    to pass `max_failure_fraction` (`reason` then says why; empty while they are not)."""

    def __init__(
        self,
        criteria: int,
        max_failure_fraction: float,
        halt: Halt,
        healths: dict[str, EndpointHealth],
    ) -> None:
        self.criteria = criteria  # every criterion the run's rows send to the judge
        self.max_failure_fraction = max_failure_fraction
        self.halt = halt
        self.healths = healths
        self.reason = ""

    def after_row(self, counts: RunCounts) -> None:
        """Check the counts once a row is counted in; halt the run if its end is now certain
        to be over (not when it is halted already: the budget or a dead endpoint says why)."""
        if self.reason or self.halt.reason:
            return
        tally = Tally.of_counts(counts)
        why = certainly_over(tally, self.criteria, self.max_failure_fraction)
        if not why:
            return
        role = MODEL if over(tally.rows_failed, tally.rows, self.max_failure_fraction) else JUDGE
        health = self.healths.get(role)
        if health is not None:
            endpoint = f"the {role} endpoint {health.url} answered {health.answered_in_run()}"
        elif role == MODEL:  # no model endpoint opened: the replies come from completions=
            endpoint = (
                "no model endpoint was called: the failed rows have no reply in the "
                "completions source (completions.source; examples.jsonl gives each one's error)"
            )
        else:  # a judge not watched (a batched one)
            endpoint = f"the {role} endpoint's answers failed"
        self.reason = (
            f"{why}, more than runner.max_failure_fraction={self.max_failure_fraction} of them "
            f"whatever the rest gives; {endpoint}"
        )
        self.halt.stop(f"stopped by the failure fraction: {self.reason}")


def raise_if_over_fraction(
    stop: FractionStop, output_dir: Path, summary: RunSummary, max_failure_fraction: float
) -> None:
    """Raise `FailureShareExceeded` if `stop` halted the run and rows were left `not run`: the
    status and exit code are `run_outcome`'s, the line says why, what was spent and not run,
    and ends with the resume command. (Certain only as the last rows finished, nothing was cut:
    the run ends as any other, `run_outcome`'s line.)"""
    not_run = summary.counts.rows_not_run if summary.counts is not None else 0
    if not stop.reason or not not_run:  # nothing was left to stop: the run's own end says it
        return
    outcome = run_outcome(Tally.of(summary), max_failure_fraction, output_dir)
    if outcome.status == "completed":  # (cannot be: the stop is taken only when certain)
        return
    raise FailureShareExceeded(
        f"stopped early: {stop.reason}; {spent_text(summary)}what finished is recorded, the "
        f"rest is not run. Once fixed, finish with: {resume_hint(output_dir)}",
        outcome.status,
        outcome.exit_code,
    )

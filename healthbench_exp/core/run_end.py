"""How a run ends, typed once: its `status.json` status (`Status`), its exit code (`Exit`), and
the exception that ends a run early carrying both (`RunEnded`).

`Status` is a StrEnum: a member is its string (`Status.COMPLETED == "completed"`), so records
written before it read the same, and JSON writes it as the plain string.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Status(StrEnum):
    """A run's status in `status.json` (and a sweep's job table)."""

    RUNNING = "running"  # started, not ended (or killed: nothing could say otherwise)
    COMPLETED = "completed"  # scored, within `runner.max_failure_fraction`
    PARTIAL = "partial"  # stopped by its budget (`budget.max_usd`): resumable
    FAILED = "failed"  # rows failed beyond the fraction, refused input, or an error
    UNGRADED = "ungraded"  # criteria without a valid verdict beyond the fraction
    INTERRUPTED = "interrupted"  # a stopping signal: resumable
    DRY_RUN = "dry_run"  # estimated only (`dry_run=true`): nothing was sent


class Exit(IntEnum):
    """The process's exit code for each way a run ends (a signal: `Exit.signalled`)."""

    COMPLETED = 0
    ERROR = 1  # an unexpected error, or an output that cannot be written
    REFUSED = 2  # a configuration, data or endpoint error: fix it, then run or resume
    FAILED = 3  # rows failed beyond `runner.max_failure_fraction`
    BUDGET = 4  # `budget.max_usd` reached: resumable with a higher budget
    UNGRADED = 5  # criteria without a valid verdict beyond the fraction
    SIGNALLED = 128  # ended by a stopping signal: 128 + its number (the shell's convention)

    @staticmethod
    def signalled(signum: int) -> int:
        """The exit code of a run a signal ended: 128 + its number (SIGHUP 129, SIGINT 130,
        SIGUSR2 140, SIGTERM 143 on Linux)."""
        return Exit.SIGNALLED + signum


class RunEnded(Exception):
    """An exception that ends a run before its normal end, carrying the run's `status` and
    `exit_code`; its text is the line that says why (and how to finish the run)."""

    def __init__(self, line: str, status: Status, exit_code: Exit) -> None:
        super().__init__(line)
        self.status, self.exit_code = status, exit_code

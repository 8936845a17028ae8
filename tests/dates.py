"""Dates as a run sees them: a test computes them when it starts the run (never once at import,
which a suite crossing midnight makes stale) and accepts either day where the run crossed
midnight."""

from __future__ import annotations

from datetime import date, timedelta


def day(offset: int) -> str:
    """The ISO date `offset` days from today, as of this call."""
    return (date.today() + timedelta(days=offset)).isoformat()


def in_days(when: str | date, began: date) -> tuple[str, ...]:
    """The phrases `in N days` that a run which began on `began` (the caller's `date.today()`
    before starting it) and ended now may print for a shutdown on `when`: one, or two where the
    run crossed midnight."""
    shutdown = date.fromisoformat(when) if isinstance(when, str) else when
    return tuple(f"in {(shutdown - d).days} days" for d in sorted({began, date.today()}))

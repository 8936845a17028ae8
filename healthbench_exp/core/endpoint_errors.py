"""What can go wrong with one request to an endpoint, as every layer names it.

Standard library only: the endpoints (`model`) raise these, graders (`grading`) and the engine
catch them, so none of them has to import another to tell a failed call from a fatal one.
"""

from __future__ import annotations


class RequestFailed(Exception):
    """A request that failed for good (after the client's retries) or returned no usable text."""


class EmptyReply(RequestFailed):
    """The endpoint answered with no text; a judge call resamples it like an unparseable verdict
    (the reference retries both), a model call fails."""


class FatalEndpointError(Exception):
    """An error no retry can fix (bad key, unknown model, unreachable endpoint): stop the run."""


class QuotaExhausted(FatalEndpointError):
    """429 `insufficient_quota` (billing, credit): stop the run; once fixed, resume it. A watched
    endpoint's halts the run (`model.health`: what finished is summarized, the rest not run)."""


class BudgetExhausted(Exception):
    """Sending this request could pass `budget.max_usd`; it was not sent."""

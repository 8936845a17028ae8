"""What a grader needs of a judge: a `Completer` that turns messages into a `Reply`.

Standard library only. `model.endpoint.ChatEndpoint` and `model.batch.BatchJudge` are
Completers; `grading` takes one and never sees how (or with which settings) it is reached.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass
class Reply:
    """One completion: its text and the usage its endpoint reported."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached: bool = False  # answered from the response cache, not paid again


class Completer(Protocol):
    """Anything that answers chat messages: ChatEndpoint, or batch.BatchJudge in front of one.

    `tag` tells apart calls meant to be sampled anew (rollout, attempt); `prefix_key` groups
    calls that share a long prompt prefix (a hint for providers' prompt caches; no change to the
    reply). Raises `endpoint_errors.RequestFailed` (this call failed for good; `EmptyReply`: no
    text), `BudgetExhausted` (not sent) or `FatalEndpointError` (stop the run).
    """

    async def complete(
        self, messages: list[dict[str, str]], tag: str = "", prefix_key: str | None = None
    ) -> Reply: ...

"""What a grader needs of a judge: a `Completer` that turns messages into a `Reply`.

Standard library only. The model layer's roles (`model.roles`) hand the engine and the tasks one
Completer per role (the chat endpoint, or the Batch API in front of it); `grading` takes one and
never sees how (or with which settings) it is reached.
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
    """Anything that answers chat messages (a role's transport: see `model.roles`).

    `tag` tells apart calls meant to be sampled anew (rollout, attempt); `prefix_key` groups
    calls that share a long prompt prefix (a hint for providers' prompt caches; no change to the
    reply). Raises `endpoint_errors.RequestFailed` (this call failed for good; `EmptyReply`: no
    text), `BudgetExhausted` (not sent) or `FatalEndpointError` (stop the run).
    """

    async def complete(
        self, messages: list[dict[str, str]], tag: str = "", prefix_key: str | None = None
    ) -> Reply: ...

    def messages_for(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages actually sent for `messages` (the role's system message first, if any)."""
        ...

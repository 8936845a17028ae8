"""Model identity: a run's model name to the snapshot published rows are keyed by.

Identity is by snapshot and documented alias only, never by a fuzzy match: the name is
lower-cased, one `openai/` prefix is dropped (OpenAI-compatible routers and Hugging Face write
it), and an alias in `ALIASES` (the provider's documented pointer from a moving name to its
snapshot at the time the sources ran) is replaced by its snapshot. A name that then equals no
row's `model_id` has nothing published for it.
"""

from __future__ import annotations

PREFIX = "openai/"

# alias -> snapshot (the provider's model pages; the paper's snapshots as simple-evals names them).
# `gpt-4o` is not one: it moved after the paper (the GPT-5 card's GPT-4o is a later model).
ALIASES: dict[str, str] = {
    "gpt-4.1": "gpt-4.1-2025-04-14",
    "o3": "o3-2025-04-16",
    "o1": "o1-2024-12-17",
    "o4-mini": "o4-mini-2025-04-16",
    "gpt-4o-2024-08-06": "gpt-4o-2024-08-06",
    "gpt-3.5-turbo": "gpt-3.5-turbo-0125",
    "gpt-5": "gpt-5-2025-08-07",
    "gpt-5-mini": "gpt-5-mini-2025-08-07",
    "gpt-5.4": "gpt-5.4-2026-03-05",
    "claude-3-7-sonnet-latest": "claude-3-7-sonnet-20250219",
}


def model_id(name: str) -> str:
    """The snapshot `name` denotes (see the module docstring)."""
    key = name.strip().lower().removeprefix(PREFIX)
    return ALIASES.get(key, key)

"""How the dry run counts a prompt's tokens before sending it: tiktoken's `o200k_base` when its
encoding loads in time, else 4 characters per token; each message adds `TOKENS_PER_MESSAGE`
and each request `TOKENS_PER_REQUEST` (the chat format's framing). `engine.estimate` counts with
it; estimate.json's `assumptions.tokenizer` names which counter it was."""

from __future__ import annotations

import threading
from collections.abc import Callable

# estimate.json's `assumptions.tokenizer` when tiktoken's encoding could not be loaded
APPROXIMATE_TOKENIZER = (
    "approximation: 4 characters per token (tiktoken's encoding could not be loaded)"
)
TOKENS_PER_MESSAGE = 3
TOKENS_PER_REQUEST = 3
TIKTOKEN_LOAD_TIMEOUT_S = 20.0


def token_counter() -> tuple[Callable[[str], int], str]:
    """(count, description): tiktoken's o200k_base if it loads in time, else 4 chars/token.

    tiktoken downloads its encoding on first use; without network that can hang, so it is loaded
    in a background thread that is abandoned after TIKTOKEN_LOAD_TIMEOUT_S.
    """
    loaded: list[Callable[[str], int]] = []  # the encoding's counter, once loaded

    def load() -> None:
        try:
            import tiktoken

            encoding = tiktoken.get_encoding("o200k_base")
        except Exception:  # not installed, or no network for its first download
            return
        loaded.append(lambda text: len(encoding.encode(text, disallowed_special=())))

    thread = threading.Thread(target=load, name="tiktoken-load", daemon=True)
    thread.start()
    thread.join(TIKTOKEN_LOAD_TIMEOUT_S)
    if loaded:
        return loaded[0], "tiktoken o200k_base"
    return (lambda text: len(text) // 4), APPROXIMATE_TOKENIZER

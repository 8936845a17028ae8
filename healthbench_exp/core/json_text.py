"""Text that carries its own JSON encoding, so a long prompt is JSON-escaped once, not per request.

A grader prompt is the template, the example's conversation and one rubric item: several KB, of
which only the rubric item differs between an example's judge calls. Escaping all of it for
every request body was the largest single CPU cost of `runner.http_client=direct` outside
aiohttp. `JsonText` is a `str` (everything else sees plain text) whose `escaped` form is
computed once per object, or built from its pieces' escaped forms (`joined`): JSON escaping is
per character, so the escape of a concatenation is the concatenation of the escapes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

JSON = json.JSONEncoder(ensure_ascii=False)  # `json.dumps(..., ensure_ascii=False)`, made once


def escape(text: str) -> str:
    """`json.dumps(text, ensure_ascii=False)` without its quotes."""
    return JSON.encode(text)[1:-1]


class JsonText(str):
    """A string whose JSON escape (`escaped`) is computed at most once, when first asked for."""

    _escaped: str | None = None
    _pieces: Sequence[str] = ()

    @property
    def escaped(self) -> str:
        """`escape(self)`, computed on first use (from the pieces it was `joined` from) and
        kept."""
        if self._escaped is None:
            if self._pieces:
                self._escaped = "".join(
                    p.escaped if isinstance(p, JsonText) else escape(p) for p in self._pieces
                )
                self._pieces = ()
            else:
                self._escaped = escape(self)
        return self._escaped

    @classmethod
    def joined(cls, pieces: Sequence[str]) -> JsonText:
        """The concatenation of `pieces`; its escape is built from theirs (a `JsonText` piece's
        own is reused)."""
        text = cls("".join(pieces))
        text._pieces = tuple(pieces)
        return text

"""JSON as strict parsers read it: never a bare NaN or Infinity.

Python's `json` writes non-finite floats as `NaN`/`Infinity`, which JSON does not have (most
parsers outside Python reject the file). Every JSON and JSONL file a run writes goes through
`dumps`, which writes an undefined number (a non-finite float) as `null`.
"""

from __future__ import annotations

import json
import math


def finite_or_null(data: object) -> object:
    """`data` with every non-finite float (in dicts, lists and tuples) replaced by None."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_or_null(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [finite_or_null(value) for value in data]
    return data


# the encoders `json.dumps(..., allow_nan=False, ensure_ascii=...)` makes on every call, made once
# (half the CPU of a short line, such as a results row, is making its encoder)
_ENCODERS = {flag: json.JSONEncoder(ensure_ascii=flag, allow_nan=False) for flag in (True, False)}


def _dumps(data: object, indent: int | None, ensure_ascii: bool) -> str:
    if indent is None:
        return _ENCODERS[ensure_ascii].encode(data)
    return json.dumps(data, allow_nan=False, indent=indent, ensure_ascii=ensure_ascii)


def dumps(data: object, *, indent: int | None = None, ensure_ascii: bool = True) -> str:
    """`json.dumps(data, indent=..., ensure_ascii=...)`, with non-finite floats written as null.

    The common case (all finite) costs one encoding; only data holding a non-finite float is
    copied and written again.
    """
    try:
        return _dumps(data, indent, ensure_ascii)
    except ValueError:
        return _dumps(finite_or_null(data), indent, ensure_ascii)

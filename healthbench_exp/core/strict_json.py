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


def dumps(data: object, *, indent: int | None = None, ensure_ascii: bool = True) -> str:
    """`json.dumps(data, indent=..., ensure_ascii=...)`, with non-finite floats written as null.

    The common case (all finite) costs one `json.dumps`; only data holding a non-finite float is
    copied and written again.
    """
    try:
        return json.dumps(data, allow_nan=False, indent=indent, ensure_ascii=ensure_ascii)
    except ValueError:
        plain = finite_or_null(data)
        return json.dumps(plain, allow_nan=False, indent=indent, ensure_ascii=ensure_ascii)

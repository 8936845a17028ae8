"""Records that are JSON: dataclasses written as dicts in field order, and read back tolerantly.

The parts of `summary.json` (`core.summary`) are `Record`s. `to_dict` writes the fields in
declaration order (nested records as dicts, inside lists and dicts too; a field whose metadata
is `OMIT_NONE` only when it is not None); `from_dict` reads a dict back, building the nested
records its type hints name, a missing key as the field's default, else None (a file written
by an older version), and ignores keys the record does not have.
"""

from __future__ import annotations

import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields
from typing import TYPE_CHECKING, ClassVar, TypeVar

R = TypeVar("R", bound="Record")


class Record:
    """Base of a dataclass that is JSON (see the module docstring); subclasses are dataclasses."""

    if TYPE_CHECKING:  # set by @dataclass on every subclass: `dataclasses.fields` accepts a Record
        __dataclass_fields__: ClassVar[dict[str, Field[object]]]

    def to_dict(self) -> dict[str, object]:
        """The fields in declaration order, as plain JSON data."""
        out: dict[str, object] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit_none"):
                continue
            out[f.name] = encode(value)
        return out

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, object]) -> R:
        """The record `data` holds (missing keys: the field's default, else None)."""
        hints = _hints(cls)
        values: dict[str, object] = {}
        for f in fields(cls):
            if f.name in data:
                values[f.name] = _decode(hints[f.name], data[f.name])
            elif f.default is not MISSING:
                values[f.name] = f.default
            elif f.default_factory is not MISSING:
                values[f.name] = f.default_factory()
            else:
                values[f.name] = None  # written by a version that did not record it
        return cls(**values)


_HINTS: dict[type, dict[str, object]] = {}  # the type hints of each record class, read once


def _hints(cls: type) -> dict[str, object]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    return hints


def encode(value: object) -> object:
    """`value` as plain JSON data: records as dicts, inside lists and dicts too."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def _decode(hint: object, value: object) -> object:
    """`value` (plain JSON) as `hint` says: records inside lists, dicts and optionals built."""
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        parts = [a for a in typing.get_args(hint) if a is not type(None)]
        return _decode(parts[0], value) if len(parts) == 1 else value
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(hint)
        return [_decode(item, v) for v in value]
    if origin is dict and isinstance(value, dict):
        _, item = typing.get_args(hint)
        return {k: _decode(item, v) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Record) and isinstance(value, dict):
        return hint.from_dict(value)
    return value


OMIT_NONE = {"omit_none": True}  # field metadata: written only when not None

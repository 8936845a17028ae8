"""What the response cache records of each entry's calls: its *profile* (role, model name,
endpoint and the settings that change a reply's length; the `profiles` table of the cache file),
under which the dry run measures reply lengths (`engine.estimate`) and `stats` counts hits."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Profile:
    """What makes replies alike in length: the role (`model` or `judge`), the model name, the
    endpoint (its URL, or the built-in server's settings) and `settings`: the request parameters
    but the model name (temperature, max_tokens, extra_body such as reasoning_effort) and the
    system message. History is measured per profile."""

    role: str
    name: str
    endpoint: str
    settings: dict[str, object] = field(default_factory=dict)

    @classmethod
    def of(
        cls, role: str, endpoint: str, params: Mapping[str, object], system_message: str | None
    ) -> Profile:
        """The profile of `role`'s calls with request `params` (`model.endpoint.request_body`)."""
        settings = {k: v for k, v in params.items() if k != "model"}
        settings["system_message"] = system_message
        return cls(role, str(params.get("model", "")), endpoint, settings)

    @property
    def settings_json(self) -> str:
        return json.dumps(self.settings, sort_keys=True)

    def describe(self) -> str:
        """`judge gpt-4.1 at https://... (max_tokens=2048, system_message='...', ...)`."""
        shown = ", ".join(
            f"{k}={_short(v)}" for k, v in sorted(self.settings.items()) if v is not None
        )
        return f"{self.role} {self.name} at {self.endpoint} ({shown or 'no settings'})"


def _short(value: object, limit: int = 40) -> str:
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def profile_id(db: sqlite3.Connection, profile: Profile, create: bool) -> int | None:
    """The id of `profile` (its model's name is part of it: two models at one endpoint with the
    same settings are two profiles) in the file: registered if `create`, else None if unknown."""
    identity = (profile.role, profile.name, profile.endpoint, profile.settings_json)
    query = "SELECT id FROM profiles WHERE role = ? AND name = ? AND endpoint = ? AND settings = ?"
    row = db.execute(query, identity).fetchone()
    if row is None and create:
        db.execute(
            "INSERT OR IGNORE INTO profiles (role, name, endpoint, settings) VALUES (?, ?, ?, ?)",
            identity,
        )
        row = db.execute(query, identity).fetchone()
    return None if row is None else int(row[0])

"""Models that come and go: the start-up check of each endpoint's shutdown date.

For each endpoint a run talks to, the shutdown date is the server's where it gives one (`GET
<base_url>/models/{id}`, the `shutdown_date` field of OpenAI's API: YYYY-MM-DD, or null when none
is announced), else the config's (`shutdown_date`, with `shutdown_source` saying where and when
the preset read it, or that the user set it on the command line). Within `WARN_WITHIN_DAYS`
days of it: one warning line naming the date and where it comes from. On or past it, or when
the server says it does not know the model (404 `model_not_found`): `ModelRetired` (one line:
the model is retired, since when, the presets to use instead, docs/judges.md) before any paid
request. The built-in endpoint and the servers a run starts itself are not asked (they
are not up yet): their presets' dates apply. A dry run asks no server.
"""

from __future__ import annotations

import json
import logging
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from healthbench_exp.config.schema import ConfigError, EndpointConfig, ServeKind
from healthbench_exp.model.access import OPENAI_DEFAULT_URL, shared_tls_context

log = logging.getLogger(__name__)

WARN_WITHIN_DAYS = 60
DOCS = "docs/judges.md"
# an endpoint's `shutdown_source` when its `shutdown_date` was set on the command line (the CLI
# sets it so): the date is then the user's, not the preset's
SET_ON_COMMAND_LINE = "set on the command line"


class ModelRetired(ConfigError):
    """An endpoint's model is past its shutdown date, or unknown to its server."""


@dataclass(frozen=True)
class Shutdown:
    """What is known of one endpoint's model: its shutdown date (None: none announced), where
    that came from (`server` or `preset`), and whether the server said it has no such model."""

    role: str
    model: str
    date: date | None
    source: str
    unknown: bool = False


@dataclass(frozen=True)
class ServerAnswer:
    """`GET /models/{id}`: the model unknown to the server, or its shutdown date (None: none
    announced), or `given` False when the reply has no `shutdown_date` field."""

    unknown: bool = False
    given: bool = False
    shutdown_date: str | None = None


def parse_date(text: str, where: str) -> date:
    """A YYYY-MM-DD date (ConfigError naming `where` otherwise)."""
    try:
        return date.fromisoformat(str(text).strip())
    except ValueError:
        raise ConfigError(f"{where}={text!r} is not a date (YYYY-MM-DD)") from None


def ask_server(
    base_url: str, model: str, api_key: str | None, timeout_s: float
) -> ServerAnswer | None:
    """The server's word on `model`; None when it gives none (no such route, no answer)."""
    url = f"{base_url.rstrip('/')}/models/{model}"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    request = urllib.request.Request(url, headers=headers)
    context = shared_tls_context() if url.startswith("https") else None
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as reply:
            body = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        try:
            error = json.loads(exc.read()).get("error") or {}
        except (ValueError, AttributeError):
            return None
        if exc.code == 404 and isinstance(error, dict) and error.get("code") == "model_not_found":
            return ServerAnswer(unknown=True)
        return None
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or "shutdown_date" not in body:
        return ServerAnswer()
    found = body["shutdown_date"]
    return ServerAnswer(given=True, shutdown_date=None if found is None else str(found))


def asks_server(endpoint: EndpointConfig) -> bool:
    """Whether the endpoint's server is up before the run starts it (not the built-in one, not
    one the run serves itself)."""
    return not endpoint.builtin and endpoint.serve.kind is ServeKind.none


def shutdown_of(role: str, endpoint: EndpointConfig, answer: ServerAnswer | None) -> Shutdown:
    """The shutdown date of `role`'s model: the server's where given, else the preset's."""
    if answer is not None and answer.unknown:
        return Shutdown(role, endpoint.name, None, "server", unknown=True)
    if answer is not None and answer.given:
        day = answer.shutdown_date
        parsed = None if day is None else parse_date(day, f"{role} server's shutdown_date")
        return Shutdown(role, endpoint.name, parsed, "server")
    day = endpoint.shutdown_date
    parsed = None if day is None else parse_date(day, f"{role}.shutdown_date")
    return Shutdown(role, endpoint.name, parsed, "preset")


def _instead(endpoint: EndpointConfig, role: str) -> str:
    presets = ", ".join(f"{role}={name}" for name in endpoint.replacements)
    return f"use {presets} instead" if presets else "choose another preset"


def judge_shutdown(shutdown: Shutdown, endpoint: EndpointConfig, today: date) -> str | None:
    """The warning line for a model shutting down within `WARN_WITHIN_DAYS` days (None
    otherwise); raises ModelRetired for a retired or unknown one."""
    role, model = shutdown.role, shutdown.model
    if shutdown.unknown:
        raise ModelRetired(
            f"{role}: the server at {endpoint.base_url or OPENAI_DEFAULT_URL} answers that model "
            f"{model} does not exist (404 model_not_found): it is retired or misspelt; "
            f"{_instead(endpoint, role)} (see {DOCS}); nothing was sent"
        )
    if shutdown.date is None:
        return None
    if shutdown.source == "server":
        source = "the server"
    elif endpoint.shutdown_source == SET_ON_COMMAND_LINE:
        source = f"{role}.shutdown_date, {SET_ON_COMMAND_LINE}"
    else:
        source = f"the preset ({endpoint.shutdown_source or 'no source'})"
    when = shutdown.date.isoformat()
    if shutdown.date <= today:
        raise ModelRetired(
            f"{role}: model {model} is retired: shut down since {when} (per {source}); "
            f"{_instead(endpoint, role)} (see {DOCS}); nothing was sent"
        )
    days = (shutdown.date - today).days
    if days > WARN_WITHIN_DAYS:
        return None
    return (
        f"{role}: model {model} shuts down on {when}, in {days} days (per {source}); "
        f"{_instead(endpoint, role)} before then (see {DOCS})"
    )


def check_shutdowns(
    endpoints: Mapping[str, EndpointConfig],
    today: date,
    ask: bool = True,
    timeout_s: float = 10.0,
    warn: bool = True,
) -> list[str]:
    """Check every endpoint (by role): the warning lines (logged with `warn`), or ModelRetired
    for the first retired model. `ask`: ask each server that is up (see `asks_server`)."""
    warnings = []
    for role, endpoint in endpoints.items():
        answer = None
        if ask and asks_server(endpoint):
            key = os.environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
            base_url = endpoint.base_url or OPENAI_DEFAULT_URL
            answer = ask_server(base_url, endpoint.name, key, timeout_s)
        line = judge_shutdown(shutdown_of(role, endpoint, answer), endpoint, today)
        if line is not None and warn:
            log.warning("%s", line)
            warnings.append(line)
    return warnings

"""Reaching an endpoint: its base URL, its API key, whether it answers, one TLS context."""

from __future__ import annotations

import os
import socket
import ssl
import urllib.error
import urllib.request
from functools import cache
from typing import TypedDict
from urllib.parse import urlsplit

from healthbench_exp.config.schema import ConfigError, EndpointConfig, ServeKind
from healthbench_exp.core.endpoint_errors import FatalEndpointError

OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


@cache
def shared_tls_context() -> ssl.SSLContext:
    """One TLS context for all clients (each builds its own otherwise: ~25 ms apiece)."""
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def resolve_api_key(role: str, config: EndpointConfig, instead: str | None = None) -> str:
    """The key from the env var named in config; a clear error before any request if unset,
    naming the variable and what to write instead (`instead`, for a role that is not a
    `model`/`judge` group: "named by ..., or ..."). The built-in endpoint and a server the
    harness starts (`serve.kind`) need none."""
    if config.builtin or config.api_key_env is None or config.serve.kind is not ServeKind.none:
        return "no-key-needed"
    key = os.environ.get(config.api_key_env, "")
    if not key:
        otherwise = instead or (
            f"named by {role}.api_key_env, or choose {role}=offline to run without one"
        )
        raise ConfigError(
            f"{role}: set the environment variable {config.api_key_env} to your API key "
            f"({otherwise})"
        )
    return key


def check_reachable(role: str, base_url: str, timeout_s: float) -> None:
    """Open (and close) a TCP connection to the endpoint so a wrong URL fails in seconds."""
    parts = urlsplit(base_url)
    if not parts.hostname:
        raise FatalEndpointError(f"{role}.base_url={base_url!r} is not a URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise FatalEndpointError(
            f"{role} endpoint {base_url} is unreachable ({exc}); check {role}.base_url "
            "and your network"
        ) from exc


def check_responses_api(role: str, base_url: str, timeout_s: float) -> None:
    """For `<role>.api=responses`: POST an empty body (no key: nothing is run or paid) to the
    endpoint's `/responses`. A server with the Responses API refuses it (400, or 401 without
    a key); one without it answers 404, and then the run stops here, before any request, with
    FatalEndpointError naming `<role>.api`. Any other failure is left to the run's requests."""
    url = base_url.rstrip("/") + "/responses"
    request = urllib.request.Request(
        url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=shared_tls_context()):
            pass
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise FatalEndpointError(
                f"{role}.api=responses: {url} answers 404 (this server has no Responses API); "
                f"set {role}.api=chat"
            ) from None
    except (urllib.error.URLError, OSError):
        pass


def endpoint_url(config: EndpointConfig, builtin_url: str | None) -> str | None:
    """The base URL a client should use (None = the openai client's default)."""
    if config.builtin:
        if builtin_url is None:
            raise ConfigError("the built-in server was not started")
        return builtin_url
    return config.base_url


class ClientSettings(TypedDict):
    """What every `openai.AsyncOpenAI` client of an endpoint is made with."""

    api_key: str
    base_url: str | None
    max_retries: int

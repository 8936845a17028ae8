"""Where the roles of one run are reached: what names each endpoint in cache keys (the built-in
and served endpoints are started here, in the engine), the API keys, and the URLs, each checked
reachable. The roles themselves are built and opened by the model layer (`model.roles`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Protocol

from healthbench_exp.config.schema import Api, EndpointConfig, OfflineServerConfig
from healthbench_exp.engine.builtin import builtin_identity, builtin_server
from healthbench_exp.engine.serve import ServedModels, is_served, serve_identity
from healthbench_exp.model.access import (
    OPENAI_DEFAULT_URL,
    check_reachable,
    check_responses_api,
    endpoint_url,
    resolve_api_key,
)
from healthbench_exp.model.roles import Role

log = logging.getLogger(__name__)


class Server(Protocol):
    """A started built-in server (`engine.builtin.builtin_server`), as far as this module sees."""

    def wait_ready(self) -> str:
        """Its base URL, once it listens."""


def endpoint_identity(endpoint: EndpointConfig, offline_server: OfflineServerConfig) -> str:
    """What names an endpoint in cache keys: its URL, or the built-in server's settings, or the
    served model's command (their port changes every run)."""
    if endpoint.builtin:
        return builtin_identity(offline_server)
    if is_served(endpoint):
        return serve_identity(endpoint)
    return endpoint.base_url or OPENAI_DEFAULT_URL


def resolve_keys(roles: dict[str, Role]) -> dict[str, str]:
    """API keys of the endpoints the run needs, read before any request (missing: ConfigError)."""
    return {name: resolve_api_key(name, role.endpoint) for name, role in roles.items()}


def reachable_urls(
    roles: dict[str, Role],
    server: Server | None,
    connect_timeout_s: float,
    served: ServedModels | None = None,
) -> dict[str, str | None]:
    """Each role's base URL (None = OpenAI's), each checked reachable so that an unreachable one
    fails fast; waits for the built-in `server` to listen, and for the `served` models' servers
    to answer, if there are any."""
    server_url = None
    if server is not None:
        server_url = server.wait_ready()
        log.info("built-in offline endpoint at %s (its scores are meaningless)", server_url)
    served_urls = served.wait_ready() if served is not None else {}
    for name, url in served_urls.items():
        log.info("%s: %s served at %s", name, roles[name].endpoint.name, url)
    urls = {
        name: served_urls[name] if name in served_urls else endpoint_url(role.endpoint, server_url)
        for name, role in roles.items()
    }
    for name, role_url in urls.items():
        check_reachable(name, role_url or OPENAI_DEFAULT_URL, connect_timeout_s)
        if roles[name].endpoint.api is Api.responses:  # a server without it fails here
            check_responses_api(name, role_url or OPENAI_DEFAULT_URL, connect_timeout_s)
    return urls


@contextlib.contextmanager
def reachable_endpoints(
    roles: dict[str, Role], offline_server: OfflineServerConfig, connect_timeout_s: float
) -> Iterator[dict[str, str | None]]:
    """Start the built-in server if a role uses it; yield `reachable_urls`; stop it on exit."""
    needed = any(role.endpoint.builtin for role in roles.values())
    with builtin_server(needed, offline_server) as server:
        yield reachable_urls(roles, server, connect_timeout_s)

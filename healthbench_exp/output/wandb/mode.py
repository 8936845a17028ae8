"""Which W&B mode a run uses, and whether W&B is ready for it, decided before any request.

`auto` follows the W&B environment variables as the `wandb` library documents them
(`WANDB_DISABLED=true`, `WANDB_MODE=disabled|offline|dryrun|online`), then goes online only with
credentials (WANDB_API_KEY, or a netrc entry for the W&B host as `wandb login` writes it). An
explicit mode in the config wins over the environment. Nothing here imports `wandb`.
"""

from __future__ import annotations

import base64
import json
import netrc
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from healthbench_exp.config.schema import WandbConfig, WandbMode

DEFAULT_BASE_URL = "https://api.wandb.ai"
PROBE_TIMEOUT_S = 5.0  # the start-up check of an online run's login and entity
_ENV_MODES = {
    "disabled": "disabled",
    "offline": "offline",
    "dryrun": "offline",
    "online": "online",
    "run": "online",
    "shared": "online",
}
_TRUE = {"1", "true", "yes", "on"}
_BAD_PROJECT_CHARS = re.compile(r"[/\\#?%:]")
NOT_LOGGED_IN = (
    "wandb.mode=online needs a W&B login: run `wandb login` (or set WANDB_API_KEY), or use "
    "wandb=offline to write the run locally and `wandb sync` it later"
)


def base_url(environ: Mapping[str, str] = os.environ) -> str:
    return (environ.get("WANDB_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def environment_mode(environ: Mapping[str, str] = os.environ) -> str | None:
    """The mode the W&B environment variables ask for, or None when they ask for none."""
    if environ.get("WANDB_DISABLED", "").strip().lower() in _TRUE:
        return "disabled"
    return _ENV_MODES.get(environ.get("WANDB_MODE", "").strip().lower())


def api_key(environ: Mapping[str, str] = os.environ) -> str | None:
    """The W&B API key: WANDB_API_KEY, else the netrc entry of the W&B host (`wandb login`)."""
    if environ.get("WANDB_API_KEY"):
        return environ["WANDB_API_KEY"]
    host = base_url(environ).split("://")[-1].split("/")[0].split(":")[0]
    try:
        entry = netrc.netrc(environ.get("NETRC")).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    return entry[2] if entry and entry[2] else None


def resolve_mode(mode: WandbMode, environ: Mapping[str, str] = os.environ) -> str:
    """'online', 'offline' or 'disabled': the configured mode, or what `auto` resolves to."""
    if mode is not WandbMode.auto:
        return mode.value
    from_environment = environment_mode(environ)
    if from_environment is not None:
        return from_environment
    return "online" if api_key(environ) else "offline"


@dataclass
class Readiness:
    """The mode a run will use, and the problems that stop it before any request."""

    mode: str
    problems: list[str]
    warning: str | None = None  # the W&B server could not be reached: the run goes offline


def local_problems(settings: WandbConfig, mode: str, environ: Mapping[str, str]) -> list[str]:
    """What can be checked without a network: a login for online runs, the project's name."""
    problems = []
    if mode == "online" and not api_key(environ):
        problems.append(NOT_LOGGED_IN)
    if mode != "disabled" and (
        not settings.project.strip() or _BAD_PROJECT_CHARS.search(settings.project)
    ):
        problems.append(
            f"wandb.project={settings.project!r} is not a valid W&B project name "
            "(non-empty, none of / \\ # ? % :)"
        )
    return problems


def probe_server(
    key: str, entity: str | None, environ: Mapping[str, str] = os.environ
) -> str | None:
    """Ask the W&B server who this key is; a problem that stops the run, or None.

    Raises OSError when the server cannot be reached in PROBE_TIMEOUT_S.
    """
    url = base_url(environ)
    query = "query { viewer { entity teams { edges { node { name } } } } }"
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={
            "Content-Type": "application/json",
            "Authorization": "Basic " + base64.b64encode(f"api:{key}".encode()).decode(),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
            body = json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return (
                f"the W&B server {url} refused the login ({exc.code}): run `wandb login "
                "--relogin`, or use wandb=offline"
            )
        raise OSError(f"HTTP {exc.code}") from exc
    except ValueError as exc:  # not JSON: not a W&B server answering
        raise OSError(f"not a W&B answer ({exc})") from exc
    viewer = (body.get("data") or {}).get("viewer")
    if not viewer:
        return f"the W&B server {url} does not know this login: run `wandb login --relogin`"
    entities = [viewer.get("entity")] + [
        edge["node"]["name"] for edge in (viewer.get("teams") or {}).get("edges", [])
    ]
    if entity and entity not in entities:
        return (
            f"wandb.entity={entity} is not an entity of this W&B login (yours: "
            f"{', '.join(e for e in entities if e)}); set wandb.entity to one of them"
        )
    return None


def check(settings: WandbConfig, environ: Mapping[str, str] = os.environ) -> Readiness:
    """The run's W&B mode and whether W&B is ready: local checks first, then (online) the server.

    An unreachable server is not a problem: the run writes its W&B data offline and says so.
    """
    mode = resolve_mode(settings.mode, environ)
    problems = local_problems(settings, mode, environ)
    if mode != "online" or problems:
        return Readiness(mode, problems)
    key = api_key(environ)
    assert key is not None
    try:
        problem = probe_server(key, settings.entity, environ)
    except OSError as exc:
        reason = getattr(exc, "reason", exc)
        return Readiness(
            "offline",
            [],
            f"W&B server {base_url(environ)} unreachable ({reason}); this run's W&B data is "
            "written offline, to upload with `wandb sync` (printed at the end)",
        )
    return Readiness(mode, [problem] if problem else [])

"""The built-in offline endpoint: a real loopback HTTP server speaking `/v1/chat/completions`.

Its scores are meaningless. It exists so the whole pipeline (HTTP, retries, parsing, scoring,
outputs) runs without a network or a key. Replies are deterministic and faults are injected at
seeded rates (see `replies`); account faults (rate limits, an exhausted quota, silence) are in
`limits`; the Batch API's files and batches in `batches`; the routes in `routes`. Its settings
are `config.schema.OfflineServerConfig`, one flag per field (`latency_ms` is `--latency-ms`): a
new field is a new flag, in `server_args`, `main` and the server's `Faults` / `AccountLimits`
alike.

It is one asyncio process (aiohttp's server, on uvloop where installed), so hundreds of requests
held for their injected latency cost it almost nothing and each is answered within about a
millisecond of its latency: a thread per connection, as `http.server` has, added 40 ms to every
request at 256 in flight. Run on its own: `python -m healthbench_exp.offline_server --port 8000
--latency-ms 200`. `GET /stats` returns request counters; `POST /stats/reset` zeroes them;
`--require-key K` answers 401 to requests without `Authorization: Bearer K`. It also speaks
enough of the files and batches API for OpenAI's Batch API (`POST /v1/files`, `POST
/v1/batches`, `GET /v1/batches/{id}`, `GET /v1/files/{id}/content`); `--batch-delay-s` keeps a
batch `in_progress` that long. Account faults (see `limits`): `--rate-limit-requests N` /
`--rate-limit-tokens N` per `--rate-limit-window-s` answer 429 as OpenAI's rate limiter does,
`--quota-exhausted` answers 429 `insufficient_quota`, `--silent` accepts requests and never
answers, `--fail-status S --fail-after N` answers every request after the first N with HTTP S
(an outage: 500, or 429 without rate-limit headers); `--limited-role` (all, model, judge) says
whose requests they apply to. `--down-after N`: the Nth chat request is answered 503 and the
server closes its port (connections are refused).

This module is what the harness imports to start it (`server_args`, `ServerProcess`; aiohttp is
imported only in the server's own process) and its command line (`main`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import fields
from typing import Any

from healthbench_exp.builtin_endpoint.limits import ROLES
from healthbench_exp.builtin_endpoint.routes import OfflineServer, serve
from healthbench_exp.config.schema import OfflineServerConfig
from healthbench_exp.core.lifeline import die_with_parent
from healthbench_exp.core.stop_signals import TERMINAL_STOPS, start_child
from healthbench_exp.model.event_loop import event_loop_factory

# Flags given always, last, in this order: a server without faults is named by them in cache
# keys (`builtin --latency-ms=0.0 ...`), so they never change.
ALWAYS = ("latency_ms", "jitter_ms", "error_rate", "malformed_rate", "empty_reply_rate", "seed")
# Flags given when (and only when) one of these others is set: the rate limits' window, and the
# role the account faults apply to. Every other flag is given only when it is not its default,
# so a server without it keeps its flags (and its cache keys).
GIVEN_WITH = {
    "rate_limit_window_s": ("rate_limit_requests", "rate_limit_tokens"),
    "limited_role": (
        "rate_limit_requests",
        "rate_limit_tokens",
        "rate_limited_first",
        "quota_exhausted",
        "silent",
        "fail_status",
    ),
}
HELP = {
    "error_rate": "share answered 429/500/503",
    "error_retry_after_ms": "the retry-after-ms of those errors",
    "malformed_rate": "share of bad verdicts",
    "fenced_rate": "share of verdicts fenced without `json`",
    "judge_error_rate": "judge 500s",
    "judge_flip_rates": "model=rate,...: these judges flip the base verdict at these rates",
    "judge_lenient_rates": "model=rate,...: these judges say met where not met at these rates",
    "model_strengths": "model=pos:neg,...: shares of positive criteria met, negative avoided",
    "batch_delay_s": "Batch API batches stay in_progress so long",
    "rate_limit_requests": "per window; 0: none",
    "rate_limit_tokens": "per window; 0: none",
    "rate_limit_schedule": "T:S,...: from T s on, other jobs spend share S of the refill",
    "rate_limit_bare": "the rate limiter's replies and 429s carry no rate-limit header",
    "rate_limited_first": "answer the first N requests 429 without any rate-limit header",
    "quota_exhausted": "429 insufficient_quota",
    "silent": "accept requests, never answer",
    "fail_status": "answer with this HTTP status once fail_after requests were answered",
    "fail_after": "requests answered before fail_status",
    "down_after": "at this chat request answer 503 and close the port (refused after)",
    "limited_role": "whose requests the rate limits, quota and silence apply to",
}
CHOICES = {"limited_role": ROLES}


def flag(name: str) -> str:
    """The command-line flag of an `OfflineServerConfig` field."""
    return "--" + name.replace("_", "-")


def server_args(require_key: str | None = None, **settings: Any) -> list[str]:
    """Command-line flags for `python -m healthbench_exp.offline_server`.

    `settings`: `OfflineServerConfig` fields (the rest at their defaults; an unknown name is a
    TypeError). `require_key`: answer 401 to any other API key.
    """
    config = OfflineServerConfig(**settings)  # each field its own type: checked when built
    default = OfflineServerConfig()
    given = [] if require_key is None else [f"{flag('require_key')}={require_key}"]
    for field in fields(OfflineServerConfig):
        name, value = field.name, getattr(config, field.name)
        if name in ALWAYS:
            continue
        if name in GIVEN_WITH:
            named = any(getattr(config, n) != getattr(default, n) for n in GIVEN_WITH[name])
        else:
            named = value != getattr(default, name)
        if named:
            given.append(flag(name) if value is True else f"{flag(name)}={value}")
    return given + [f"{flag(name)}={getattr(config, name)}" for name in ALWAYS]


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per `OfflineServerConfig` field (a flag for a boolean one), with its default."""
    for field in fields(OfflineServerConfig):
        name, default, about = flag(field.name), field.default, HELP.get(field.name)
        if isinstance(default, bool):
            parser.add_argument(name, default=default, help=about, action="store_true")
        elif field.name in CHOICES:
            parser.add_argument(name, default=default, help=about, choices=CHOICES[field.name])
        else:
            parser.add_argument(name, default=default, help=about, type=type(default))


class ServerProcess:
    """The server in a child process on a free port; stopped on exit, and ending by itself when
    the process that started it dies, however it dies (`--parent-pid`: `core.lifeline`). It
    ignores the signals that reach the harness's whole process group (Ctrl-C, SIGHUP, SIGTERM),
    so it answers the run's requests in flight while the run stops; `stop` ends it.

    `with ServerProcess(args) as server:` starts it and waits until it listens. `start()` alone
    returns at once, so the caller can do other work while it starts; `wait_ready()` then waits.
    """

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self) -> ServerProcess:
        if self.process is None:
            module = "healthbench_exp.offline_server"
            parent = f"--parent-pid={os.getpid()}"  # it dies with this process
            self.process = start_child(
                [sys.executable, "-m", module, "--port=0", parent, *self.args],
                stdout=subprocess.PIPE,
                text=True,
                # Ctrl-C, a closed terminal or a SIGTERM to the group (`scancel`, `kill
                # -TERM -PGID`) reaches the harness's whole group: the run's requests in
                # flight still get their answers, then the harness stops it (SIGKILL)
                ignoring=(*TERMINAL_STOPS, signal.SIGTERM),
            )
        return self

    def wait_ready(self) -> str:
        """The base URL, once the server listens."""
        if not self.base_url:
            assert self.process is not None and self.process.stdout is not None, "not started"
            line = self.process.stdout.readline()
            if not line.startswith("listening on "):
                self.process.kill()
                raise RuntimeError(f"built-in server did not start (said {line!r})")
            self.base_url = line.split()[-1]
        return self.base_url

    def __enter__(self) -> ServerProcess:
        self.start().wait_ready()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """End the server at once (SIGKILL: it ignores SIGTERM from its start, and holds nothing
        to save) and wait for it."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            if self.process.stdout is not None:
                self.process.stdout.close()


def argument_parser() -> argparse.ArgumentParser:
    """The command line: `--port`, `--require-key` and one option per OfflineServerConfig field."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--require-key", default=None, help="answer 401 to any other API key")
    parser.add_argument(
        "--parent-pid", type=int, default=None, help="exit when this process (the harness) dies"
    )
    add_server_arguments(parser)
    return parser


def settings_from(args: argparse.Namespace) -> OfflineServerConfig:
    """The server's settings from its parsed command line."""
    return OfflineServerConfig(
        **{field.name: getattr(args, field.name) for field in fields(OfflineServerConfig)}
    )


def main(argv: list[str] | None = None) -> None:
    args = argument_parser().parse_args(argv)
    if args.parent_pid is not None:
        die_with_parent(args.parent_pid)
        for signum in TERMINAL_STOPS:  # Ctrl-C, a closed terminal: the harness stops us
            signal.signal(signum, signal.SIG_IGN)
    server = OfflineServer(settings_from(args), args.require_key, clock=time.monotonic)
    with (
        asyncio.Runner(loop_factory=event_loop_factory()) as runner,
        contextlib.suppress(KeyboardInterrupt),
    ):
        runner.run(serve(server, args.port))


if __name__ == "__main__":
    main()

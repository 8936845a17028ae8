"""Model servers the harness starts for one run (`<role>.serve.kind=vllm` or `llamacpp`), as it
starts the built-in endpoint: each job of a sweep serves its own model, on its own port, with
its own log. Every kind shares this lifecycle; what differs (the command line, the log's name,
the cache identity) is `engine.serve_commands`.

A served role's server (`vllm serve <role.name> ...`, `python -m llama_cpp.server --model
<gguf> ...`) listens on a free port of 127.0.0.1, started in a session of its own with its
output appended to the run directory's `<kind>.log` (`<kind>-judge.log` for a served judge:
`vllm.log`, `llamacpp-judge.log`), which the run's `core.run_files.RunFiles` opens. The run
waits for `GET /v1/models` to answer, at most `serve.ready_timeout_s`, checking all the while
that the process is alive: a server that exits
fails the run at once with the last lines of its log; one that never answers fails it at the
bound; one that answers for another model name fails it naming both. The role's client then
talks to `http://127.0.0.1:<port>/v1` with no API key. When the run ends (completed, failed,
Ctrl-C, SIGTERM) the whole process group is sent SIGTERM, then SIGKILL if it has not exited
within `STOP_GRACE_S`. If the harness itself dies (`kill -9` included), the server gets SIGTERM
from the kernel (Linux's parent-death signal) and a guard process beside it stops its whole
process group (`core.lifeline`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from healthbench_exp.config.schema import EndpointConfig, ServeConfig, ServeKind
from healthbench_exp.core.endpoint_errors import FatalEndpointError
from healthbench_exp.core.lifeline import guard_command, has_death_signal
from healthbench_exp.core.run_files import RunFiles
from healthbench_exp.core.stop_signals import STOPPING_SIGNALS, start_child
from healthbench_exp.engine.serve_commands import log_name, program, serve_command
from healthbench_exp.engine.serve_commands import serve_identity as serve_identity  # re-exported

STOP_GRACE_S = 30.0  # SIGTERM, then this long for the server to exit, then SIGKILL
POLL_S = 0.5  # between readiness checks
LOG_TAIL_LINES = 20


class ServeError(FatalEndpointError):
    """A served model's server did not start (it exited, or did not answer in time)."""


def is_served(endpoint: EndpointConfig) -> bool:
    """Whether the harness starts this endpoint's server itself."""
    return endpoint.serve.kind is not ServeKind.none


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# readiness checks go straight to 127.0.0.1, never through an HTTP(S)_PROXY a cluster sets
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass
class ModelServer:
    """One served role's server process: `start`, `wait_ready`, `stop`."""

    role: str
    name: str  # the model it serves (the role's `name`)
    settings: ServeConfig
    files: RunFiles  # the run directory: the log is opened through it
    log_name: str
    process: subprocess.Popen[bytes] | None = None
    guard: subprocess.Popen[bytes] | None = None  # `core.lifeline`'s guard of its group
    port: int = 0
    started: float = 0.0  # time.monotonic() at start: the readiness bound counts from it
    log_offset: int = 0  # where this start's lines begin in the log (a resume appends)

    @property
    def log_path(self) -> Path:
        return self.files.directory / self.log_name

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ModelServer:
        """Start the server on a free port, its output appended to `log_path`."""
        self.port = free_port()
        self.started = time.monotonic()
        command = serve_command(self.name, self.settings, self.port)
        with self.files.open_log(self.log_name) as log:
            self.log_offset = log.tell()
            started = datetime.now(UTC).isoformat(timespec="milliseconds")
            log.write(f"=== {started} healthbench-exp started: {' '.join(command)}\n".encode())
            log.flush()
            self.process = start_child(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # its own process group: stopped as a whole, by the run alone (a signal to the
                # run's group, even one landing while it is forked, reaches the run only)
                start_new_session=True,
                die_with_parent=has_death_signal(),
            )
        # stops the server's process group if the harness dies without stopping it (kill -9);
        # it outlives every stopping signal to the harness's group: the run stops it
        self.guard = start_child(
            guard_command(self.process.pid),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            ignoring=STOPPING_SIGNALS,
        )
        return self

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last `lines` lines this start wrote to the log."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(self.log_offset)
                text = log.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"(log unreadable: {exc})"
        return "\n".join(text.rstrip("\n").splitlines()[-lines:])

    def _served_models(self) -> list[str] | None:
        """The model ids `/v1/models` lists; None while nothing answers there."""
        try:
            with _DIRECT.open(f"{self.base_url}/models", timeout=5) as reply:
                listing = json.loads(reply.read())
        except (OSError, ValueError):  # refused, reset, timed out, an error status, not JSON
            return None
        models = listing.get("data") if isinstance(listing, dict) else None
        return [str(m.get("id")) for m in models or [] if isinstance(m, dict)]

    def _fail(self, what: str) -> ServeError:
        return ServeError(
            f"{self.role}: {program(self.settings)} serving {self.name} {what}; its log: "
            f"{self.log_path}, last lines:\n{self.log_tail()}"
        )

    def wait_ready(self) -> str:
        """The base URL once the server answers `/v1/models` for this model (ServeError if it
        exits first, answers for another model, or does not answer within the bound)."""
        assert self.process is not None, "start() first"
        deadline = self.started + self.settings.ready_timeout_s
        while True:
            code = self.process.poll()
            if code is not None:
                raise self._fail(f"exited with code {code} before it was ready")
            models = self._served_models()
            if models is not None:
                if self.name not in models:
                    raise self._fail(
                        f"answers on port {self.port} for {', '.join(models) or 'no model'}, "
                        f"not {self.name} (a --served-model-name in {self.role}.serve.args?)"
                    )
                return self.base_url
            if time.monotonic() >= deadline:
                raise self._fail(
                    f"did not answer on port {self.port} within "
                    f"{self.settings.ready_timeout_s:g} s ({self.role}.serve.ready_timeout_s)"
                )
            time.sleep(POLL_S)

    def stop(self) -> None:
        """SIGTERM to the server's process group; SIGKILL after `STOP_GRACE_S`."""
        if self.process is None:
            return
        how = f"exited by itself (code {self.process.returncode})"
        if self.process.poll() is None:
            how = "did not stop on SIGTERM: killed"
            for sig in (signal.SIGTERM, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, sig)
                try:
                    self.process.wait(timeout=STOP_GRACE_S)
                except subprocess.TimeoutExpired:
                    continue
                if sig == signal.SIGTERM:
                    how = "stopped (SIGTERM)"
                break
        with contextlib.suppress(ProcessLookupError):  # workers it left behind
            os.killpg(self.process.pid, signal.SIGKILL)
        if self.guard is not None:
            self.guard.kill()
            self.guard.wait()
        with contextlib.suppress(OSError), self.files.open_log(self.log_name) as log:
            stopped = datetime.now(UTC).isoformat(timespec="milliseconds")
            log.write(f"=== {stopped} healthbench-exp: the server {how}\n".encode())


class ServedModels:
    """The started servers of a run, by role."""

    def __init__(self, servers: Mapping[str, ModelServer]) -> None:
        self.servers = dict(servers)

    def wait_ready(self) -> dict[str, str]:
        """Each served role's base URL, once its server answers (see `ModelServer.wait_ready`)."""
        return {role: server.wait_ready() for role, server in self.servers.items()}


@contextlib.contextmanager
def served_models(
    endpoints: Mapping[str, EndpointConfig], files: RunFiles
) -> Iterator[ServedModels]:
    """Start a server for each endpoint with `serve.kind` set (not waited for: they load while
    the caller reads the data); stop every one on exit, however the run ends."""
    servers: dict[str, ModelServer] = {}
    try:
        for role, endpoint in endpoints.items():
            if is_served(endpoint):
                server = ModelServer(
                    role,
                    endpoint.name,
                    endpoint.serve,
                    files,
                    log_name(role, endpoint.serve.kind),
                )
                servers[role] = server
                server.start()
        yield ServedModels(servers)
    finally:
        for server in servers.values():
            server.stop()

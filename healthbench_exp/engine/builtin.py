"""The built-in offline endpoint (`model=offline`, `judge=offline`, the demo): started for a run
that needs it, and named in cache keys by its settings. The only engine module that imports
`healthbench_exp.builtin_endpoint`, where that endpoint lives."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import asdict

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args
from healthbench_exp.config.schema import OfflineServerConfig


def builtin_identity(settings: OfflineServerConfig) -> str:
    """The built-in server in cache keys: its settings, since injected faults (malformed
    verdicts) change its replies and must not be replayed to a run without them."""
    # what changes no reply: the batch delay and the account faults (rate limits, quota, silence)
    changes_replies = {
        **asdict(settings),
        "batch_delay_s": 0.0,
        "rate_limit_requests": 0,
        "rate_limit_tokens": 0,
        "quota_exhausted": False,
        "silent": False,
    }
    return "builtin " + " ".join(server_args(**changes_replies))


@contextlib.contextmanager
def builtin_server(needed: bool, settings: OfflineServerConfig) -> Iterator[ServerProcess | None]:
    """The built-in server if `needed` (a needed endpoint uses it), else None; stopped on exit.

    It is started, not waited for: it gets ready while the caller loads the data.
    """
    if not needed:
        yield None
        return
    process = ServerProcess(server_args(**asdict(settings))).start()
    try:
        yield process
    finally:
        process.stop()

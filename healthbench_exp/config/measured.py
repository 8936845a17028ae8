"""What a config measures, as opposed to how a run runs; plain data in, standard library only.

A run's measurement is every config key that can reach a prompt, a reply or a metric: the model
and judge, sampling, the dataset, whose completions, the task, scoring. `HOW_IT_RUNS` lists,
explicitly, the keys that cannot (budget, concurrency, timeouts, retries, progress, the HTTP
client, the cache, W&B, prices); everything else counts as measured. `resume=` refuses a change
to a measured key, and a run's usage is summed only over invocations that measured the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass

# Keys that change how a run runs, never what it measures: a resume may override them. A key is
# listed exactly, or by a prefix ending in "."; every other key is part of what is measured.
HOW_IT_RUNS: tuple[str, ...] = (
    "budget.",
    "cache.",
    "wandb.",
    "dry_run",  # a boolean in runs saved before it was a node
    "dry_run.",
    "protocol.strict",  # whether a deviating run may start; what it measures is the same
    "runner.max_concurrent",
    "runner.max_parallel_judges",
    "runner.max_in_flight",
    "runner.max_retries",
    "runner.http_client",
    "runner.request_timeout_s",
    "runner.reasoning_request_timeout_s",
    "runner.connect_timeout_s",
    "runner.stall_notice_s",
    "runner.dead_endpoint_calls",
    "runner.dead_endpoint_s",
    "runner.stop_grace_s",
    "runner.progress",
    "runner.max_failure_fraction",
    "model.max_concurrency",
    "judge.max_concurrency",
    "model.api_key_env",
    "judge.api_key_env",
    "model.prompt_cache_key",  # a hint to the provider's prompt cache; the reply is the same
    "judge.prompt_cache_key",
    "model.price.",
    "judge.price.",
    "model.expected_completion_tokens",  # cost estimates only
    "judge.expected_completion_tokens",
    "judge.batch_poll_s",
    "judge.early_stop_unparseable",  # whether a run stops early, not what a verdict is
    "model.rate_limit.",  # the account's limits: pacing and estimates only
    "judge.rate_limit.",
    "model.serve.executable",  # where the server's program is, and how long it may take to load
    "model.serve.ready_timeout_s",
    "judge.serve.executable",
    "judge.serve.ready_timeout_s",
    "dataset.cache_dir",
    "offline_server.latency_ms",
    "offline_server.jitter_ms",
    "offline_server.batch_delay_s",
    # the built-in server's account faults delay or refuse requests, never change a reply
    "offline_server.rate_limit_requests",
    "offline_server.rate_limit_tokens",
    "offline_server.rate_limit_window_s",
    "offline_server.quota_exhausted",
    "offline_server.silent",
    "offline_server.limited_role",
)
ABSENT = object()  # a key one of two configs does not have


def how_it_runs(key: str) -> bool:
    """Whether dotted `key` only changes how a run runs (a resume may change it)."""
    return any(key == p or (p.endswith(".") and key.startswith(p)) for p in HOW_IT_RUNS)


@dataclass(frozen=True)
class Change:
    """One config key whose value differs between the saved run and the resume."""

    key: str
    old: object
    new: object

    def __str__(self) -> str:
        return f"{self.key}: {_shown(self.old)} -> {_shown(self.new)}"


def _shown(value: object) -> str:
    if value is ABSENT:
        return "(unset)"
    return value if isinstance(value, str) else json.dumps(value)


def measured_changes(
    saved: Mapping[str, object], composed: Mapping[str, object], defaults: Mapping[str, object]
) -> list[Change]:
    """Keys of what is measured whose composed value differs from the saved run's.

    A key the saved config lacks (an option added since the run) counts as its schema default.
    """
    changes = []
    for key in sorted(saved.keys() | composed.keys()):
        if how_it_runs(key):
            continue
        old = saved.get(key, defaults.get(key, ABSENT))
        new = composed.get(key, ABSENT)
        if old != new:
            changes.append(Change(key, old, new))
    return changes


def measured_fingerprint(config_dict: Mapping[str, object]) -> str:
    """sha256 of what a config measures (its keys outside `HOW_IT_RUNS`): two invocations
    with the same fingerprint measure the same thing."""
    measured = {
        k: v
        for k, v in flat_keys(config_dict).items()
        # no jury: the fingerprint of a run made before `jury` existed
        if not how_it_runs(k) and not (k in ("jury", "jury_members") and not v)
    }
    text = json.dumps(measured, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def flat_keys(data: Mapping[str, object], prefix: str = "") -> dict[str, object]:
    """Dotted key -> value; an empty mapping is a value of its own (`extra_body: {}`)."""
    flat: dict[str, object] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flat_keys(value, dotted + "."))
        else:
            flat[dotted] = value
    return flat

"""The built-in server's settings: one flag per OfflineServerConfig field, the same flags (its
name in cache keys) as before, and the settings the server process reads back from them."""

from __future__ import annotations

from dataclasses import asdict, fields

import pytest

from healthbench_exp.builtin_endpoint.limits import AccountLimits
from healthbench_exp.builtin_endpoint.replies import Faults, completion_response
from healthbench_exp.builtin_endpoint.server import argument_parser, server_args, settings_from
from healthbench_exp.config.schema import OfflineServerConfig
from healthbench_exp.testing.fake_clock import FakeClock

DEFAULT_FLAGS = [
    "--latency-ms=0.0",
    "--jitter-ms=0.0",
    "--error-rate=0.0",
    "--malformed-rate=0.0",
    "--empty-reply-rate=0.0",
    "--seed=0",
]


def test_a_default_server_keeps_its_flags() -> None:
    """The flags name the built-in server in cache keys: a default one's never change."""
    assert server_args(**asdict(OfflineServerConfig())) == DEFAULT_FLAGS
    assert server_args() == DEFAULT_FLAGS
    assert server_args(latency_ms=20) == ["--latency-ms=20", *DEFAULT_FLAGS[1:]]


def test_options_are_named_only_when_set_or_needed() -> None:
    assert server_args(fenced_rate=1.0, require_key="k") == [
        "--require-key=k",
        "--fenced-rate=1.0",
        *DEFAULT_FLAGS,
    ]
    # the window and the limited role come with the account faults they qualify, never alone
    assert server_args(rate_limit_window_s=6.0, limited_role="judge") == DEFAULT_FLAGS
    assert server_args(rate_limit_requests=2)[:3] == [
        "--rate-limit-requests=2",
        "--rate-limit-window-s=60.0",
        "--limited-role=all",
    ]
    assert server_args(silent=True)[:2] == ["--silent", "--limited-role=all"]
    with pytest.raises(TypeError):
        server_args(latency=5)  # not a field


def test_every_field_round_trips_through_the_command_line() -> None:
    """What the harness passes is what the server process reads: one option per field."""
    changed = {}
    for field in fields(OfflineServerConfig):
        default = field.default
        if isinstance(default, bool):
            changed[field.name] = not default
        elif isinstance(default, str):
            changed[field.name] = "judge"  # limited_role, the only text option
        else:
            changed[field.name] = type(default)(default + 3)
    settings = OfflineServerConfig(**changed)
    args = argument_parser().parse_args(server_args(require_key="k", **changed))
    assert settings_from(args) == settings and args.require_key == "k"
    assert settings_from(argument_parser().parse_args([])) == OfflineServerConfig()
    assert len({field.name for field in fields(OfflineServerConfig)}) == len(changed)


def test_faults_and_limits_take_the_config() -> None:
    settings = OfflineServerConfig(error_rate=1.0, seed=3, rate_limit_requests=1)
    faults = Faults(settings)
    status, _, _ = completion_response(faults, 0.5, "m", {}, [{"content": "hi"}])
    assert status in (429, 500, 503) and faults.counts["errors_injected"] == 1
    limits = AccountLimits(settings, FakeClock().now)
    assert list(limits.capacities) == ["requests"] and limits.applies(is_judge=False)
    assert Faults(settings).draw() == Faults(settings).draw()  # seeded by settings.seed

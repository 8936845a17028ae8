"""A run's control state has one home: `RunControl`, made once and handed to what needs it.

With the real openai client over HTTP, to a loopback port nothing listens on: the endpoints
the roles open share the control's one halt and report each failed attempt to the control's
health for their role from construction; a stop through any watch halts every endpoint.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from dataclasses import replace
from pathlib import Path

import pytest

from healthbench_exp.config.schema import Config
from healthbench_exp.core.endpoint_errors import RequestFailed
from healthbench_exp.engine.control import RunControl
from healthbench_exp.engine.run import roles_of
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.health import REFUSED, EndpointStopped
from healthbench_exp.model.roles import JUDGE, MODEL, open_roles
from healthbench_exp.output.run_dir import RunDirectory
from tests.engine.test_runner import make_config


def control_of(config: Config, base_url: str) -> RunControl:
    roles = roles_of(config)
    urls: dict[str, str | None] = {name: base_url for name in roles.needed}
    return RunControl(config.runner, roles, urls, criteria=10, kind="eval", clock=SYSTEM_CLOCK)


def test_the_endpoints_share_the_controls_halt_and_report_to_its_health(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"  # nothing listens there
    config = replace(make_config(url), runner=replace(make_config(url).runner, max_retries=2))
    control = control_of(config, url)
    assert set(control.healths) == {MODEL, JUDGE}
    assert all(health.halt is control.halt for health in control.healths.values())
    assert control.fraction.halt is control.halt and control.grace.halt is control.halt

    async def scenario() -> bool:
        roles = roles_of(config)
        async with open_roles(
            roles,
            {name: url for name in roles.needed},
            {name: "k" for name in roles.needed},
            config.runner,
            config.cache,
            config.budget,
            RunDirectory(tmp_path),
            control.halt,
            control.healths,
            control.clock,
        ) as opened:
            shared = all(
                endpoint.halt is control.halt and endpoint.clock is control.clock
                for endpoint in opened.endpoints
            )
            with control.watching(opened.endpoints), pytest.raises(RequestFailed):
                await opened.opened[JUDGE].endpoint.complete([{"role": "user", "content": "hi"}])
            return shared

    assert asyncio.run(scenario())
    # every attempt (the first and each of the client's retries) reached the judge's health
    judge_failed = control.healths[JUDGE].failures_in_run[REFUSED]
    assert judge_failed == config.runner.max_retries + 1, control.healths[JUDGE].failures_in_run
    assert control.healths[MODEL].failures_in_run.total() == 0  # the model was not called
    assert control.in_flight() == 0  # outside `watching`, no endpoint is counted


def test_a_stop_through_any_watch_halts_the_whole_run() -> None:
    control = control_of(make_config("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1")
    control.healths[MODEL]._stop("declared dead by the test")
    assert "the model endpoint" in control.halt.reason  # through the one halt
    with pytest.raises(EndpointStopped):
        control.halt.check()
    assert control.grace.begin(signal.SIGINT, "SIGINT") is None  # nothing in flight: leave now
    assert control.halt.leaving

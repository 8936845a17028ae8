"""No wall-clock default below the run: every part of the request path that reads or sleeps on
time is given the run's one clock (`Shared.clock`), so none can silently fall back to the wall
clock when it is built alone."""

from __future__ import annotations

import inspect

import pytest

from healthbench_exp.model.health import EndpointHealth
from healthbench_exp.model.http import DirectPoster
from healthbench_exp.model.pacer import AdaptiveLimit, EndpointPacer, HeaderBuckets
from healthbench_exp.model.transport import SdkClients

# each constructor, and the parameter that carries the run's clock (or its sleep)
CLOCKED = [
    (EndpointPacer, "clock"),
    (HeaderBuckets, "clock"),
    (AdaptiveLimit, "clock"),
    (EndpointHealth, "clock"),
    (DirectPoster, "sleep"),
    (SdkClients, "sleep"),
]


@pytest.mark.parametrize(("cls", "name"), CLOCKED, ids=[cls.__name__ for cls, _ in CLOCKED])
def test_the_clock_is_a_required_parameter(cls: type, name: str) -> None:
    parameter = inspect.signature(cls.__init__).parameters[name]
    assert parameter.default is inspect.Parameter.empty, f"{cls.__name__}({name}=...) defaults"

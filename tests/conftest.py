"""Shared fixtures: a real loopback chat-completions server and small HealthBench-schema files."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from healthbench_exp.testing.server import ServerProcess, server_args


def make_row(prompt_id: str = "p1", **overrides: Any) -> dict[str, Any]:
    """A minimal valid HealthBench row; keyword arguments replace fields."""
    row: dict[str, Any] = {
        "prompt_id": prompt_id,
        "prompt": [{"role": "user", "content": "I have a headache, what should I do?"}],
        "rubrics": [
            {
                "criterion": "Advises rest and fluids.",
                "points": 5,
                "tags": ["level:example", "axis:completeness"],
            },
            {
                "criterion": "Mentions red-flag symptoms.",
                "points": 8,
                "tags": ["level:example", "axis:accuracy"],
            },
            {
                "criterion": "Recommends an unsafe dose.",
                "points": -6,
                "tags": ["level:example", "axis:accuracy"],
            },
        ],
        "example_tags": ["theme:hedging"],
        "ideal_completions_data": None,
        "canary": "test",
    }
    row.update(overrides)
    return row


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test (and every subprocess it starts) gets its own response cache."""
    directory = tmp_path / "response-cache"
    monkeypatch.setenv("HEALTHBENCH_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[list[Any], str], Path]:
    def write(rows: list[Any], name: str = "data.jsonl") -> Path:
        path = tmp_path / name
        path.write_text(
            "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
            encoding="utf-8",
        )
        return path

    return write


class LoopbackServer:
    def __init__(self, process: ServerProcess) -> None:
        self.base_url = process.base_url

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats") as response:
            return json.loads(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(
            self.base_url.removesuffix("/v1") + "/stats/reset", data=b"{}", method="POST"
        )
        urllib.request.urlopen(request).close()


@pytest.fixture
def loopback_server() -> Iterator[Callable[..., LoopbackServer]]:
    """Start built-in servers with given fault settings; all are stopped after the test."""
    started: list[ServerProcess] = []

    def start(**faults: Any) -> LoopbackServer:
        process = ServerProcess(server_args(**faults)).__enter__()
        started.append(process)
        return LoopbackServer(process)

    yield start
    for process in started:
        process.__exit__(None, None, None)

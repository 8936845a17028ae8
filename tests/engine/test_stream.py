"""Rows are streamed (issue 29, memory): started as places free, their items dropped as they start,
and each finished row handed on with its position; the engine keeps no list of every result."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from healthbench_exp.cli.job import build_task
from healthbench_exp.config.schema import SamplingConfig
from healthbench_exp.core.types import ExampleResult, RowItem
from healthbench_exp.engine.pilot import FirstRows
from healthbench_exp.engine.run import RunSettings, run
from healthbench_exp.output.run_dir import RunDirectory
from healthbench_exp.tasks.base import Clients
from tests.engine.test_runner import make_config

ROWS = 24  # the bundled sample
IN_FLIGHT = 3


@dataclass
class Watched(FirstRows[RowItem, ExampleResult]):
    """The eval, watched: how many rows exist and what is left of its list of rows as each
    row starts."""

    rows_left: list[int] = field(default_factory=list)  # len(items) as each row starts
    running: int = 0
    peak_running: int = 0
    row_tasks: list[int] = field(default_factory=list)  # the engine's row tasks alive
    items_list: list[RowItem] = field(default_factory=list)

    def items(self) -> list[RowItem]:
        self.items_list = super().items()
        return self.items_list

    async def run_item(self, item: RowItem, clients: Clients) -> ExampleResult:
        self.rows_left.append(len(self.items_list))
        self.row_tasks.append(
            sum(
                "evaluate_rows.<locals>.one" in t.get_coro().__qualname__  # type: ignore[union-attr]
                for t in asyncio.all_tasks()
            )
        )
        self.running += 1
        self.peak_running = max(self.peak_running, self.running)
        try:
            return await super().run_item(item, clients)
        finally:
            self.running -= 1


class Positions:
    """A sink that keeps each row's position and prompt."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, str, int]] = []

    def start(self) -> None:
        pass

    def on_result(self, result: ExampleResult, position: int) -> None:
        self.rows.append((position, result.example.prompt_id, result.rollout))

    def describe(self) -> dict[str, Any]:
        return {}

    def finish(self, summary: object) -> None:
        pass

    def fail(self, error: BaseException) -> None:
        pass


def test_rows_start_as_places_free_and_their_items_are_let_go(loopback_server, tmp_path) -> None:
    server = loopback_server(latency_ms=20, jitter_ms=20, seed=5)
    config = make_config(server.base_url, sampling=SamplingConfig())
    config = replace(config, runner=replace(config.runner, max_concurrent=IN_FLIGHT))
    task = Watched(build_task(config, {}), ROWS)
    sink = Positions()
    summary = run(task, RunSettings(config, RunDirectory(tmp_path)), [sink])

    assert summary.eval_counts.rows == ROWS and summary.eval_counts.rows_scored == ROWS
    # each row's item leaves the list as the row is started: as the k-th row begins, at least
    # k + 1 and at most k + IN_FLIGHT items have left it (rows started together)
    left = task.rows_left
    assert left[:IN_FLIGHT] == [ROWS - IN_FLIGHT] * IN_FLIGHT and left[-1] == 0
    assert all(ROWS - k - IN_FLIGHT <= n <= ROWS - k - 1 for k, n in enumerate(left)), left
    assert task.items_list == []
    # the places stay full and no row task waits for a place: as each row starts, exactly
    # IN_FLIGHT row tasks exist (the first ones started together, then one for each that ended)
    assert task.peak_running == IN_FLIGHT
    assert task.row_tasks == [IN_FLIGHT] * ROWS
    # every row once, with its place in the run's rows (the order of `items()`)
    assert sorted(position for position, _, _ in sink.rows) == list(range(ROWS))
    fresh = build_task(config, {})
    items = fresh.items()  # each names its example by position in the task's examples
    order = [(fresh.examples[item.position].prompt_id, item.rollout) for item in items]
    assert sorted(sink.rows) == [(p, *key) for p, key in enumerate(order)]

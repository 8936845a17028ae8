"""An eval builds each row's example when the row starts (issue 29, memory): before the run the
task holds its rows as positions, while it runs only the running rows' examples exist, and a bad
row still fails the run before its first request, naming its line and id."""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

from healthbench_exp import run as run_eval
from healthbench_exp.cli.job import build_task
from healthbench_exp.config.schema import DatasetConfig, SamplingConfig
from healthbench_exp.core.types import Example, ExampleResult, RowItem
from healthbench_exp.data.healthbench import DataError
from healthbench_exp.engine.pilot import FirstRows
from healthbench_exp.engine.run import RunSettings, run
from healthbench_exp.output.run_dir import RunDirectory
from healthbench_exp.tasks.base import Clients
from tests.conftest import make_row
from tests.engine.test_runner import make_config
from tests.engine.test_stream import Positions

ROWS = 30
IN_FLIGHT = 3


def live_examples() -> int:
    """Every `Example` alive, those the run's collector froze at its start included."""
    frozen = gc.get_freeze_count() > 0
    gc.unfreeze()  # frozen objects are not in gc.get_objects()
    gc.collect()
    alive = sum(isinstance(o, Example) for o in gc.get_objects())
    if frozen:
        gc.freeze()
    return alive


@dataclass
class Counted(FirstRows[RowItem, ExampleResult]):
    """The eval, with the examples alive counted as each row starts."""

    alive: list[int] = field(default_factory=list)
    before_run: int = -1
    held: int = -1  # the examples `items()` left alive

    def items(self) -> list[RowItem]:
        self.before_run = live_examples()
        items = super().items()
        self.held = live_examples() - self.before_run
        return items

    async def run_item(self, item: RowItem, clients: Clients) -> ExampleResult:
        self.alive.append(live_examples() - self.before_run)
        return await super().run_item(item, clients)


def test_only_the_running_rows_examples_exist(loopback_server, tmp_path, write_jsonl) -> None:
    server = loopback_server(latency_ms=10, jitter_ms=10, seed=2)
    data = write_jsonl([make_row(f"r{i:02d}") for i in range(ROWS)])
    config = make_config(
        server.base_url, dataset=DatasetConfig(path=str(data)), sampling=SamplingConfig()
    )
    config = replace(config, runner=replace(config.runner, max_concurrent=IN_FLIGHT))
    task = Counted(build_task(config, {}), ROWS)
    sink = Positions()  # each finished row's (position, prompt_id, rollout)
    summary = run(task, RunSettings(config, RunDirectory(tmp_path)), [sink])

    assert summary.eval_counts.rows_scored == ROWS
    items = task.task.items()
    assert all(type(item) is RowItem for item in items)  # positions, not examples
    assert task.held == 0
    # as each row starts, the examples of the rows running exist (this one's is built next),
    # never the run's other rows
    assert len(task.alive) == ROWS and max(task.alive) <= IN_FLIGHT - 1, task.alive
    assert sorted(prompt_id for _, prompt_id, _ in sink.rows) == [f"r{i:02d}" for i in range(ROWS)]


def test_a_bad_row_fails_before_any_request(loopback_server, tmp_path, write_jsonl) -> None:
    server = loopback_server()
    rows = [make_row(f"r{i}") for i in range(30)]
    rows[21] = make_row("r21", example_tags=["theme:hedging", "theme:communication"])
    config = make_config(server.base_url, dataset=DatasetConfig(path=str(write_jsonl(rows))))
    with pytest.raises(DataError, match=r"data\.jsonl line 22 \(prompt_id r21\): needs exactly"):
        run_eval(config, tmp_path / "run", {})
    assert server.stats()["requests"] == 0


@dataclass
class Rewritten(FirstRows[RowItem, ExampleResult]):
    """The eval, with its data file rewritten in place once its rows are validated."""

    path: Path = Path()

    def items(self) -> list[RowItem]:
        items = super().items()
        text = self.path.read_text().replace('"r7"', '"x7"')  # the same length, another row
        with open(self.path, "r+") as file:
            file.write(text)
        return items


def test_a_row_changed_under_the_run_stops_it_naming_its_line(
    loopback_server, tmp_path, write_jsonl
) -> None:
    server = loopback_server()
    data = write_jsonl([make_row(f"r{i}") for i in range(12)])
    config = make_config(
        server.base_url, dataset=DatasetConfig(path=str(data)), sampling=SamplingConfig()
    )
    config = replace(config, runner=replace(config.runner, max_concurrent=2))
    task = Rewritten(build_task(config, {}), 12, path=data)
    with pytest.raises(DataError, match=r"data\.jsonl line 8 changed since the run validated it"):
        run(task, RunSettings(config, RunDirectory(tmp_path)), [])

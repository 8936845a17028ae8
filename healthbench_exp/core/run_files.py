"""The RunFiles protocol: how the layers below `output` write into the run directory.

Every file of a run directory is written by `output`: the sinks write the rows, `summary.json`,
`results/` and `report.html`; `output.run_dir.RunDirectory` writes the rest, and implements this
protocol for the layers that produce the data of a file but may not import `output` (as
inspect_ai passes its recorders in). The CLI makes one `RunDirectory` per job and passes it
down: the engine's `RunSettings.files`, from there the model layer's batch judge and the
engine's served models. Those layers read their files back themselves (`directory`), but
never write one.

- `append_invocation`: one line of `invocations.jsonl` per invocation (`model.costs`).
- `write_batches`: a batch judge's `batches.json` (or a jury member's `batches-<name>.json`),
  atomically, before the batch is waited for, so a resume finds it (`model.batch`).
- `open_log`: a served model's log, opened for appending (`engine.serve`), given to the server
  process as its output; and the run's spend journal (`SPEND_JOURNAL`, `model.spend_journal`).
- `within`: the same for a directory inside this one (a dry run's pilot: `pilot/`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import BinaryIO, Protocol

INVOCATIONS_FILE = "invocations.jsonl"
BATCHES_FILE = "batches.json"  # the judge's; a jury member's is batches-<member>.json
SPEND_JOURNAL = ".spend"  # each request sent and answered, as it happens (model.spend_journal)


class RunFiles(Protocol):
    """The run directory, as the layers below `output` see it: read its files at `directory`,
    write them only through these methods."""

    @property
    def directory(self) -> Path:
        """The run directory."""

    def within(self, name: str) -> RunFiles:
        """The files of the directory `name` inside this one."""

    def append_invocation(self, entry: Mapping[str, object]) -> None:
        """Append one invocation's record to `invocations.jsonl`."""

    def write_batches(self, name: str, entries: Sequence[Mapping[str, object]]) -> None:
        """Replace the batch record `name` with `entries`, atomically."""

    def open_log(self, name: str) -> BinaryIO:
        """The log file `name`, opened for appending (the caller closes it)."""

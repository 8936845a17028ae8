"""A run's directory: the files of it that no sink writes, written here (`core.run_files`).

The sinks (`output.sinks`, `output.wandb.sink`) write the rows as they finish, then
`summary.json`, `results/`, `report.html` and the W&B run. `RunDirectory` writes every other
file of the run, so all writing into a run directory is in `output`:

- `status.json` (`write_status` / `try_write_status`, from the CLI): running, then how it ended;
- `estimate.json` (a dry run, from the CLI) and `.hydra/` (a resume's config, from the CLI; a
  fresh run's is Hydra's own, as is `healthbench.log`);
- for the layers below `output`, which get it as a `core.run_files.RunFiles`:
  `invocations.jsonl` (`model.costs`), `batches.json` (`model.batch`), a served model's
  `<kind>.log` (`engine.serve`) and the spend journal `.spend` (`model.spend_journal`).

The lock (`.lock`, `cli.run_lock`) and the call journal (`.calls/`, the response cache's store
when `cache.enabled=false`, `model.cache`) are kept in the directory, not written as records.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from healthbench_exp.core.run_end import Status
from healthbench_exp.core.run_files import INVOCATIONS_FILE
from healthbench_exp.output.files import output_errors, try_write_status, write_json, write_status

ESTIMATE_FILE = "estimate.json"
HYDRA_DIR = ".hydra"


@dataclass(frozen=True)
class RunDirectory:
    """The files of the run in `directory` that no sink writes (`core.run_files.RunFiles`)."""

    directory: Path

    def within(self, name: str) -> RunDirectory:
        return RunDirectory(self.directory / name)

    # -- for the layers below output (core.run_files.RunFiles) ------------------------------

    def append_invocation(self, entry: Mapping[str, object]) -> None:
        """One line of `invocations.jsonl`, appended when an invocation ends. A failed write
        raises `OutputWriteError` naming the file, as every other run-directory write does."""
        path = self.directory / INVOCATIONS_FILE
        with output_errors(path):
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def write_batches(self, name: str, entries: Sequence[Mapping[str, object]]) -> None:
        """A batch judge's record (`batches.json`), atomically: a reader, or a resume after a
        crash, never sees half of it."""
        path = self.directory / name
        with output_errors(path):
            write_json(path, list(entries))

    def open_log(self, name: str) -> BinaryIO:
        """A served model's log, for appending: its server's output goes straight into it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return (self.directory / name).open("ab")

    # -- for the CLI ---------------------------------------------------------------------------

    def write_status(self, status: Status, error: str | None = None) -> None:
        """`status.json` (`output.files.write_status`)."""
        write_status(self.directory, status, error)

    def try_write_status(self, status: Status, error: str | None = None) -> str | None:
        """`status.json` for a run that is already failing: None, or why it was not written
        (`output.files.try_write_status`)."""
        return try_write_status(self.directory, status, error)

    def write_estimate(self, estimate: Mapping[str, object]) -> None:
        """A dry run's `estimate.json`."""
        path = self.directory / ESTIMATE_FILE
        with output_errors(path):
            write_json(path, dict(estimate))

    def write_hydra_config(self, files: Mapping[str, str]) -> None:
        """`.hydra/<name>` for each YAML text of `files` (a resume's, once its checks pass)."""
        folder = self.directory / HYDRA_DIR
        with output_errors(folder):
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in files.items():
                (folder / name).write_text(text, encoding="utf-8")

"""Errors every layer may raise or catch, stdlib only.

- `OutputWriteError`: an output of the run (a JSONL file, summary.json, status.json, ...) could
  not be written; raised by the writers in `output`, named to the user by the engine's stop
  handling (`engine.stops.failure_line`), which says what failed, on which path and what to do.
"""

from __future__ import annotations

from pathlib import Path


class OutputWriteError(Exception):
    """Writing `path` failed with the OSError `error` (disk full, read-only, no permission)."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.error = error
        super().__init__(f"cannot write {path}: {error.strerror or error}")

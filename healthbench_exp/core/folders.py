"""Whether a folder a run will need can be made: checked at start-up, before anything is written
or sent, so that a read-only mount or HOME is named with the rest of a start's problems."""

from __future__ import annotations

import os
from pathlib import Path


def uncreatable(directory: Path) -> str | None:
    """Why this process cannot create the missing folder `directory` (its nearest existing
    parent is on a read-only file system, or not writable for this user), as "<parent> is
    <reason>"; None when it exists, can be created, or lies under a file (said elsewhere)."""
    if directory.exists():
        return None
    parent = directory.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or os.access(parent, os.W_OK | os.X_OK):
        return None
    try:
        read_only = bool(os.statvfs(parent).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return f"{parent} is {'on a read-only file system' if read_only else 'not writable'}"

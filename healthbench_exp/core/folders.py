"""Whether a folder a run will need can be made, or written in: checked at start-up, before
anything is written or sent, so that a read-only mount or HOME is named with the rest of a
start's problems."""

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
    return not_writable(parent)


def unwritable(directory: Path) -> str | None:
    """Why this process cannot write in `directory`: a missing one that cannot be created
    (`uncreatable`), or an existing one on a read-only file system or not writable for this
    user, as "<folder> is <reason>"; None when it can, or when it is not a folder."""
    if not directory.exists():
        return uncreatable(directory)
    if not directory.is_dir() or os.access(directory, os.W_OK | os.X_OK):
        return None
    return not_writable(directory)


def not_writable(folder: Path) -> str:
    """ "<folder> is on a read-only file system" or "<folder> is not writable"."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return f"{folder} is {'on a read-only file system' if read_only else 'not writable'}"

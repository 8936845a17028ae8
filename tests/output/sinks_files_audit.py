"""Run `python -m healthbench_exp ARGS...` and record who writes into its run directory.

`python tests/output/sinks_files_audit.py RUN_DIR RECORD ARGS...`: an audit hook
(`sys.addaudithook`) sees every file opened for writing, every rename onto a path and every SQLite
database opened; for each one under RUN_DIR it notes the path (relative to RUN_DIR) and the writer:
the module of `healthbench_exp` (relative to the package) nearest the call, or `hydra` when Hydra's
own code is nearer (it writes `.hydra/` and the job's log). The records go to RECORD as JSON lines
when the process exits. The run is the real CLI, in this process, with its exit code.
"""

from __future__ import annotations

import atexit
import json
import os
import runpy
import sys
from types import FrameType

import healthbench_exp

PACKAGE = os.path.dirname(os.path.realpath(healthbench_exp.__file__)) + os.sep
HYDRA = os.sep + "hydra" + os.sep
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

run_dir = os.path.realpath(sys.argv[1]) + os.sep
record_file = sys.argv[2]
records: list[dict[str, str]] = []
busy = False  # the hook itself opens nothing, but a record's encoding must not recurse


def writer(frame: FrameType | None) -> str:
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(PACKAGE):
            return name[len(PACKAGE) :]
        if HYDRA in name and "site-packages" in name:
            return "hydra"
        frame = frame.f_back
    return "?"


def written_path(event: str, args: tuple[object, ...]) -> object:
    if event == "open":
        path, mode, flags = args
        if isinstance(mode, str):
            return path if any(c in mode for c in "wax+") else None
        return path if isinstance(flags, int) and flags & WRITE_FLAGS else None
    if event == "os.rename":  # os.rename, os.replace, Path.replace: the destination
        return args[1]
    if event == "sqlite3.connect":
        return args[0]
    return None


def hook(event: str, args: tuple[object, ...]) -> None:
    global busy
    if busy or event not in ("open", "os.rename", "sqlite3.connect"):
        return
    busy = True
    try:
        path = written_path(event, args)
        if isinstance(path, str | bytes | os.PathLike):
            full = os.path.abspath(os.fsdecode(path))
            if full.startswith(run_dir):
                records.append({"path": full[len(run_dir) :], "writer": writer(sys._getframe(1))})
    finally:
        busy = False


def save() -> None:
    global busy
    busy = True
    with open(record_file, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(r) + "\n" for r in records)


atexit.register(save)
sys.addaudithook(hook)
sys.argv = ["healthbench_exp", *sys.argv[3:]]
runpy.run_module("healthbench_exp", run_name="__main__", alter_sys=True)

"""The W&B side of a job, in its own process: `python -m healthbench_exp.output.wandb.worker`.

`tracker.Tracker` starts it when the job's first result is written and talks to it in JSON
lines: on stdin `open` (the `wandb.init` arguments), then any number of `progress` (a dict for
`run.log`), then `finish` (the summary and the run directory, after every local output is
written) or `fail` (an exit code); on stdout it answers `opened` (run id, mode, run folder),
`warning` (a W&B failure, which never stops the job) and `done`. Everything W&B does (importing
`wandb`, `wandb.init`, building tables, `finish`) happens here, so none of it holds the job's
interpreter lock while requests are in flight, and a W&B crash or hang costs the job nothing.

An online run that cannot open falls back to an offline run with the same id. The run id is
written to `<run dir>/wandb/run.json` once the run is open (see `tracker.saved_run_id`).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import sys
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from healthbench_exp.core.run_end import Exit
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.output.wandb.content import log_eval, log_meta_eval

if TYPE_CHECKING:  # imported when needed: loading wandb takes seconds
    import wandb


def emit(channel: IO[str], event: str, **fields: object) -> None:
    channel.write(json.dumps({"event": event, **fields}) + "\n")
    channel.flush()


def open_run(init: dict[str, Any], channel: IO[str]) -> wandb.Run | None:
    """`wandb.init(**init)`; an online run that fails opens offline; None if neither opens.
    (`init`: decoded JSON, which `wandb.init` checks itself.)

    An offline run sets WANDB_MODE=offline for this process first: `wandb` reads its
    process-wide settings from the environment, and with them online it posts its own usage
    metrics to the W&B server when the process exits, even for an offline run (10 s at exit
    when that server accepts and never answers; an upload no offline run should make).
    """
    if init.get("mode") == "offline":
        os.environ["WANDB_MODE"] = "offline"
    import wandb

    settings = wandb.Settings(silent=True, console="off")
    Path(init["dir"]).mkdir(parents=True, exist_ok=True)
    try:
        return wandb.init(**init, settings=settings)
    except Exception as exc:
        if init.get("mode") != "online":
            emit(channel, "warning", message=f"could not open the run ({exc}); nothing is tracked")
            return None
        emit(
            channel,
            "warning",
            message=f"could not open the online run ({exc}); writing it offline instead",
        )
    with contextlib.suppress(Exception):
        wandb.teardown()  # the failed run keeps its id otherwise ("run ID is in use")
    os.environ["WANDB_MODE"] = "offline"  # read again by the next setup (see above)
    try:
        return wandb.init(**{**init, "mode": "offline"}, settings=settings)
    except Exception as exc:
        emit(channel, "warning", message=f"could not open an offline run either ({exc})")
        return None


def serve(commands: IO[str], channel: IO[str]) -> None:
    """Open the run from the first command, then follow the rest until finish, fail or EOF."""
    first = json.loads(commands.readline() or "{}")
    if first.get("op") != "open":
        return
    output_dir = Path(first["output_dir"])
    # W&B copies an artifact's files into `$WANDB_DATA_DIR/artifacts/staging` (by default under
    # ~/.local/share/wandb), and an offline run refers to them there until `wandb sync`: inside
    # the run folder, they stay with the run (a WANDB_DATA_DIR the user set is kept)
    os.environ.setdefault("WANDB_DATA_DIR", str(output_dir / "wandb"))
    run = open_run(first["init"], channel)
    if run is None:
        emit(channel, "done")
        return
    mode = "offline" if run.offline else "online"
    emit(channel, "opened", run_id=run.id, mode=mode, dir=run.dir)
    with contextlib.suppress(OSError):
        record = output_dir / "wandb" / "run.json"
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"run_id": run.id, "project": first["init"]["project"]}))
    exit_code: int = Exit.ERROR  # the job's process went away without saying how it ended
    for line in commands:
        command = json.loads(line)
        try:
            if command["op"] == "progress":
                run.log(command["data"])
            elif command["op"] == "finish":
                summary = RunSummary.from_dict(command["summary"])
                if summary.is_meta_eval:
                    log_meta_eval(run, summary, output_dir)
                else:
                    log_eval(run, summary, output_dir)
                exit_code = Exit.COMPLETED
                break
            elif command["op"] == "fail":
                exit_code = command["exit_code"]
                break
        except Exception as exc:
            emit(channel, "warning", message=f"{type(exc).__name__}: {exc}")
            if command["op"] == "finish":
                exit_code = Exit.ERROR
                break
    try:
        run.finish(exit_code=exit_code)
    except Exception as exc:
        emit(channel, "warning", message=f"could not finish the run ({exc})")
    emit(channel, "done")


def main() -> None:
    # Ctrl-C, a SIGTERM or a closed terminal's SIGHUP to the process group reaches the job,
    # which says how the run ended (and finishes this W&B run as interrupted)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hasattr(signal, "SIGHUP"):  # not on Windows
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
    # no third-party lines ("install weave", "Adding directory to artifact"); stdout is ours
    os.environ.setdefault("WANDB_DISABLE_WEAVE", "true")
    os.environ.setdefault("WANDB_SILENT", "true")
    channel = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever W&B prints goes to stderr
    try:
        serve(sys.stdin, channel)
    except Exception as exc:  # never a traceback in the job's output
        emit(channel, "warning", message=f"{type(exc).__name__}: {exc}")
        emit(channel, "done")


if __name__ == "__main__":
    try:
        main()
    finally:
        gc.freeze()  # done: the exit frees what wandb loaded without scanning it for cycles

"""One writer per run directory: an exclusive lock on `<run dir>/.lock` for as long as a run writes.

The lock is `fcntl.flock` on the file, which the kernel drops when its holder exits, however it
exits (`kill -9` included): a lock file whose holder is gone is stale by construction and the
next run takes it over, saying whose it was. The file holds the holder's pid, host, start time and
command line, so a second run into the same directory refuses at once and names them.

The lock is taken by `RunLockCallback` (registered in `conf/config.yaml`) as Hydra starts the run,
before Hydra writes `.hydra/` and the log into the directory; for a sweep, on the sweep directory
before any job starts. Each job then locks its own directory (`acquire`, called by the app), and
the lock is released (the file removed) when the job ends.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from healthbench_exp.core.run_end import Exit

LOCK_FILE = ".lock"
MIN_FREE_BYTES = 64 * 1024  # what a run needs before its first result: .hydra/, log, status


class RunDirBusy(Exception):
    """A live process holds the run directory's lock; the message says whose and what to do."""


class RunDirUnwritable(Exception):
    """The run directory cannot be created or written (read-only, permissions, disk full)."""


@dataclass(frozen=True)
class RunLock:
    """A held lock: the open lock file `fd` in `directory`."""

    directory: Path
    fd: int

    def release(self) -> None:
        """Remove the lock file (if it is still this lock's) and drop the lock."""
        path = self.directory / LOCK_FILE
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == os.fstat(self.fd).st_ino:
                path.unlink()
        os.close(self.fd)


_held: dict[Path, RunLock] = {}  # the locks this process holds, by absolute directory


@dataclass(frozen=True)
class Holder:
    """What a lock file says about the process that wrote it (None: not said)."""

    pid: int | None = None
    host: str | None = None
    started: float | None = None  # time.time()
    command: str | None = None

    @classmethod
    def of(cls, data: object) -> Holder:
        """The holder a decoded lock file names (values of the wrong type: not said)."""
        if not isinstance(data, dict):
            return cls()
        pid, host, started, command = (data.get(k) for k in ("pid", "host", "started", "command"))
        return cls(
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            host=host if isinstance(host, str) else None,
            started=started if isinstance(started, int | float) else None,
            command=command if isinstance(command, str) else None,
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "host": self.host,
            "started": self.started,
            "command": self.command,
        }


def _holder(fd: int) -> Holder:
    """What the lock file says about the process that wrote it (nothing if empty or unreadable)."""
    try:
        return Holder.of(json.loads(os.pread(fd, 65536, 0) or b"{}"))
    except (OSError, ValueError):
        return Holder()


_TYPED: list[str] = []  # the arguments as typed (`remember_typed`); [] in a sweep's job process


def remember_typed(arguments: Sequence[str]) -> None:
    """Keep the command line as the user typed it, for the lock's `command`: `main` rewrites a
    `resume=R` (or `regrade=`) into its run's own arguments before Hydra sees them, which are
    not a command the user would recognize, nor one to type again."""
    _TYPED[:] = arguments


def typed_arguments() -> list[str]:
    """The arguments `remember_typed` kept; else this process's (a job process of a sweep)."""
    return list(_TYPED) or sys.argv[1:]


def _describe(holder: Holder) -> str:
    if not holder.pid:
        return "another process"
    started = holder.started
    when = time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(started)) if started else ""
    command = f": {holder.command}" if holder.command else ""
    return f"pid {holder.pid} on {holder.host or '?'}{when}{command}"


def _in_use(directory: Path, holder: Holder) -> str:
    pid = holder.pid
    stop = f"wait for it to end or stop it (kill {pid})" if pid else "wait for it to end"
    return (
        f"{directory} is in use by another run ({_describe(holder)}); {stop}, "
        "or choose another hydra.run.dir"
    )


def _open_locked(path: Path) -> tuple[int, Holder]:
    """Open and lock `path`, returning the fd and what the file said before (a stale holder).

    Raises RunDirBusy if a live process holds it. A holder that releases (and removes the file)
    between our open and our lock leaves us locking a removed file: then we try again.
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise RunDirBusy(_in_use(path.parent, holder)) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            same_file = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same_file = False
        if same_file:
            return fd, _holder(fd)
        os.close(fd)


def _free_bytes(directory: Path) -> int:
    """Bytes an unprivileged writer may still use on `directory`'s file system."""
    stats = os.statvfs(directory)
    return stats.f_bavail * stats.f_frsize


def busy(directory: Path) -> str | None:
    """The refusal `acquire` would give if a live process holds `directory`'s lock, else None;
    creates and writes nothing (a directory that is to be refused must stay as it is)."""
    try:
        fd = os.open(Path(directory) / LOCK_FILE, os.O_RDONLY)
    except OSError:  # no lock file (or no directory): nobody holds it
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return _in_use(Path(directory), _holder(fd))
    except OSError:
        return None
    finally:
        os.close(fd)  # closing drops the lock taken for the test
    return None


def acquire(directory: Path) -> RunLock:
    """Lock `directory` (created if missing) for this process; the held lock if it already is.

    Raises RunDirBusy (a live process holds it) or RunDirUnwritable (it cannot be written, or
    its disk has less than MIN_FREE_BYTES free).
    A lock file left by a process that is gone is taken over, with a note on stderr.
    """
    directory = Path(os.path.abspath(directory))
    if directory in _held:
        return _held[directory]
    path = directory / LOCK_FILE
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, previous = _open_locked(path)
    except OSError as exc:
        raise RunDirUnwritable(
            f"cannot write into {directory} ({exc.strerror or exc}); make it writable, free "
            "space, or choose another hydra.run.dir"
        ) from None
    free = _free_bytes(directory)
    if free < MIN_FREE_BYTES:  # Hydra's own files would fail next, with its traceback
        os.close(fd)
        raise RunDirUnwritable(
            f"only {free // 1024} KiB free on the disk of {directory}; free space or choose "
            "another hydra.run.dir"
        )
    me = Holder(
        pid=os.getpid(),
        host=socket.gethostname(),
        started=time.time(),
        command=" ".join([Path(sys.executable).name, "-m", "healthbench_exp", *typed_arguments()]),
    )
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me.to_dict()).encode("utf-8"), 0)
    except OSError as exc:
        os.close(fd)
        raise RunDirUnwritable(
            f"cannot write {path} ({exc.strerror or exc}); free space on its disk or choose "
            "another hydra.run.dir"
        ) from None
    if previous.pid and previous.pid != me.pid:
        print(
            f"note: {directory} was locked by {_describe(previous)}, which is no longer "
            "running; taking the lock over",
            file=sys.stderr,
        )
    if not _held:  # a run that ends in SystemExit never reaches Hydra's end callbacks
        atexit.register(release_all)
    lock = _held[directory] = RunLock(directory, fd)
    return lock


def release(directory: Path) -> None:
    """Release this process's lock on `directory`, if it holds one."""
    lock = _held.pop(Path(os.path.abspath(directory)), None)
    if lock is not None:
        lock.release()


def release_all() -> None:
    """Release every lock this process holds (at exit)."""
    while _held:
        _held.popitem()[1].release()


def acquire_or_exit(directory: Path) -> RunLock:
    """`acquire`, or print its one-line error and exit with status 2."""
    try:
        return acquire(directory)
    except (RunDirBusy, RunDirUnwritable) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(Exit.REFUSED) from None


class RunLockCallback(Callback):
    """Locks the run directory (or, for a sweep, the sweep directory) before Hydra writes into it,
    and each job's directory until the job ends."""

    def on_run_start(self, config: DictConfig, **kwargs: object) -> None:
        acquire_or_exit(Path(str(config.hydra.run.dir)))

    def on_run_end(self, config: DictConfig, **kwargs: object) -> None:
        release(Path(str(config.hydra.run.dir)))

    def on_multirun_start(self, config: DictConfig, **kwargs: object) -> None:
        acquire_or_exit(Path(str(config.hydra.sweep.dir)))

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        release(Path(str(config.hydra.sweep.dir)))

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: object) -> None:
        release(Path(str(config.hydra.runtime.output_dir)))

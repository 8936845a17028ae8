"""Claims on the response cache's keys, so that processes sharing one cache pay once per call.

Two runs (or two jobs of a sweep) that miss the same key at about the same time would both send
the request and both pay. On a miss, the process that sends first holds the key's *claim*: an
exclusive `flock` on `<cache dir>/claims/<key>.lock`, from before its request goes out until its
reply is committed to the cache file. Another process that misses the same key meanwhile finds
it claimed and waits for the claim to be released, then reads the cache again: a hit is a replay
(free); a miss (the holder's request failed, or the holder died: the kernel releases a dead
process's locks, so no claim outlives its process) means it claims the key and sends itself.
Within one process, a second call of a key in flight waits on the first's claim the same way,
without touching the file.

The lock file is removed by its holder, while locked, at release. A process that opened the
path before the removal may then lock a file no longer in the directory; it checks, once locked,
that the path still names the file it locked (same inode), and starts again if not.

`flock` holds between the processes of one machine, on local disks; on NFS and most shared
cluster file systems it may not (it may be local to each node, or emulated): processes on
different machines may then each pay for the same call, as without claims. Where `fcntl` is
missing (Windows), keys are not claimed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: keys are not claimed
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

CLAIMS_DIR = "claims"
# A process waiting on another process's claim tries the lock again after this long, doubling up
# to the most: a blocking `flock` would need a thread that cannot be cancelled (a Ctrl-C would
# then wait for the holder), so the wait polls; each try is an open, a lock and a close.
FIRST_RETRY_S = 0.005
LONGEST_RETRY_S = 0.05

WAITING = (
    "another process sharing the response cache %s is making some of this run's calls: this "
    "run waits for their replies rather than paying for them again"
)

Answer = TypeVar("Answer")


class Claim:
    """One key claimed by this process: its lock file, open and exclusively locked."""

    def __init__(self, key: str, path: Path, descriptor: int, claims: KeyClaims) -> None:
        self.key = key
        self.path = path
        self.descriptor = descriptor
        self.claims = claims
        self.released = asyncio.Event()  # set once released: this process's waiters go on

    def release(self) -> None:
        """Remove the lock file and unlock it (idempotent): a waiting process then reads the
        cache again. The holder's reply, if any, must be committed before."""
        if self.released.is_set():
            return
        with contextlib.suppress(OSError):
            os.unlink(self.path)  # while locked: a process that opened it before re-checks
        os.close(self.descriptor)  # unlocks
        self.claims.held.pop(self.key, None)
        self.released.set()


class KeyClaims:
    """The claims of one cache directory as one process takes them (see the module docstring).

    Keys are not claimed (`ready` is False: the cache works as without claims) where `fcntl` is
    missing or the claims folder cannot be made."""

    def __init__(self, cache_directory: Path) -> None:
        self.directory = cache_directory / CLAIMS_DIR
        self.held: dict[str, Claim] = {}  # the keys this process has claimed, by key
        self.usable: bool | None = None if fcntl is not None else False  # None: not yet known
        self.waited = False  # whether this process has waited on another's claim (said once)

    def ready(self) -> bool:
        """Whether keys are claimed, making the claims folder on the first call (a process
        that never misses, a dry run, makes none)."""
        if self.usable is None:
            try:
                self.directory.mkdir(exist_ok=True)
                self.usable = True
            except OSError as exc:
                log.debug("response cache claims are off: %s (%s)", self.directory, exc)
                self.usable = False
        return self.usable

    def try_claim(self, key: str) -> Claim | None:
        """Claim `key` if no process (this one included) holds it; None if one does."""
        if key in self.held:
            return None
        path = self.directory / f"{key}.lock"
        while True:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(descriptor)
                return None
            except BaseException:
                os.close(descriptor)
                raise
            try:
                same_file = os.stat(path).st_ino == os.fstat(descriptor).st_ino
            except FileNotFoundError:
                same_file = False
            if same_file:
                claim = self.held[key] = Claim(key, path, descriptor, self)
                return claim
            os.close(descriptor)  # its holder removed it after this process opened it: again

    async def claim(self, key: str, answered: Callable[[], Answer | None]) -> Answer | Claim | None:
        """`answered()` once it is not None, else `key`'s claim, waiting while another call of
        `key` (in this process or another) holds it: `answered` (a cache lookup) is asked each
        time the claim is taken, and the claim is released again when it answers. None where
        keys are not claimed (`ready`)."""
        if not self.ready():
            return None
        delay = FIRST_RETRY_S
        while True:
            mine = self.held.get(key)
            if mine is not None:
                await mine.released.wait()
                continue
            claim = self.try_claim(key)
            if claim is not None:
                answer = answered()
                if answer is None:
                    return claim
                claim.release()
                return answer
            if not self.waited:
                self.waited = True
                log.info(WAITING, self.directory.parent)
            await asyncio.sleep(delay)  # another process holds it: see LONGEST_RETRY_S
            delay = min(delay * 2, LONGEST_RETRY_S)

    def release_all(self) -> None:
        """Release every claim this process still holds (closing the cache)."""
        for claim in list(self.held.values()):
            claim.release()

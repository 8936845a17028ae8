"""Claims on the response cache's keys, so that processes sharing one cache pay once per call.

Two runs (or two jobs of a sweep) that miss the same key at about the same time would both send
the request and both pay. On a miss, the process that sends first holds the key's *claim*: an
exclusive lock on one byte of `<cache dir>/claims.lock` (a POSIX record lock, `fcntl.lockf`, at
an offset drawn from the key), from before its request goes out until its reply is committed to
the cache file. Another process that misses the same key meanwhile finds it claimed and waits
for the claim to be released, then reads the cache again: a hit is a replay (free); a miss (the
holder's request failed, or the holder died: the kernel releases a dead process's locks, so no
claim outlives its process) means it claims the key and sends itself.

Record locks belong to the process, not to a file descriptor: a process's locks never exclude
each other, and closing any descriptor of the file drops them all. So each process opens the
file once and keeps it open (`_descriptor`), and within a process a second call of a claimed key
waits on the first's `Claim` (`KeyClaims.held`), without the file. A claim and its release are
one system call each (about 2 us; a lock file per key, created and removed, cost 160 us).

The locks hold between the processes of one machine, on local disks; on NFS and most shared
cluster file systems they may not (they depend on the server's lock service, may be local to
each node): processes on different machines may then each pay for the same call, as without
claims. Where `fcntl` is missing (Windows), keys are not claimed.
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
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

CLAIMS_FILE = "claims.lock"
# A process waiting on another process's claim tries the lock again after this long, doubling up
# to the most: a blocking lock would need a thread that cannot be cancelled (a Ctrl-C would then
# wait for the holder), so the wait polls; each try is one system call.
FIRST_RETRY_S = 0.005
LONGEST_RETRY_S = 0.05
WAITING = (
    "another process sharing the response cache %s is making some of this run's calls: this "
    "run waits for their replies rather than paying for them again"
)
HELD_ELSEWHERE = (errno.EACCES, errno.EAGAIN)  # what a refused non-blocking lock raises

Answer = TypeVar("Answer")

# this process's descriptor of each claims file, by path: opened once, never closed (closing
# one would drop every lock the process holds on the file)
_descriptors: dict[str, int] = {}


def _descriptor(path: Path) -> int:
    """This process's descriptor of the claims file `path` (created if missing); OSError."""
    name = str(path.resolve())
    if name not in _descriptors:
        _descriptors[name] = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
    return _descriptors[name]


def key_offset(key: str) -> int:
    """The byte of the claims file that stands for `key` (56 bits of its hash: two keys of one
    cache share one with a chance of about n^2 / 2^57)."""
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:7], "big")


class Claim:
    """One key claimed by this process: its byte of the claims file, locked."""

    def __init__(self, key: str, claims: KeyClaims) -> None:
        self.key = key
        self.claims = claims
        self.released = asyncio.Event()  # set once released: this process's waiters go on

    def release(self) -> None:
        """Unlock the key (idempotent): a waiting process then reads the cache again. The
        holder's reply, if any, must be committed before."""
        if self.released.is_set():
            return
        self.claims.unlock(self.key)
        self.claims.held.pop(self.key, None)
        self.released.set()


class KeyClaims:
    """The claims of one cache directory as one process takes them (see the module docstring).

    Keys are not claimed (`ready` is False: the cache works as without claims) where `fcntl` is
    missing or the claims file cannot be opened. Two `KeyClaims` of one directory in one process
    do not exclude each other (the locks are the process's): a process claims through one.
    `across_processes=False` (a cache no other process opens: a run's own call journal): keys
    are claimed within this process only, and no claims file is made."""

    def __init__(self, cache_directory: Path, across_processes: bool = True) -> None:
        self.path = cache_directory / CLAIMS_FILE
        self.across_processes = across_processes
        self.held: dict[str, Claim] = {}  # the keys this process has claimed, by key
        self.descriptor = -1
        self.usable: bool | None = None if fcntl is not None else False  # None: not yet known
        self.waited = False  # whether this process has waited on another's claim (said once)

    def ready(self) -> bool:
        """Whether keys are claimed, opening the claims file on the first call (a process that
        never misses, a dry run, opens none)."""
        if self.usable is None and not self.across_processes:
            self.usable = True
        if self.usable is None:
            try:
                self.descriptor = _descriptor(self.path)
                self.usable = True
            except OSError as exc:
                log.debug("response cache claims are off: %s (%s)", self.path, exc)
                self.usable = False
        return self.usable

    def try_claim(self, key: str) -> Claim | None:
        """Claim `key` if no process (this one included) holds it; None if one does. Call
        once `ready`."""
        if key in self.held:
            return None
        if not self.across_processes:
            claim = self.held[key] = Claim(key, self)
            return claim
        try:
            fcntl.lockf(self.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, key_offset(key))
        except OSError as exc:
            if exc.errno in HELD_ELSEWHERE:
                return None
            raise
        claim = self.held[key] = Claim(key, self)
        return claim

    def unlock(self, key: str) -> None:
        """Unlock `key`'s byte (`Claim.release`)."""
        if not self.across_processes:
            return
        fcntl.lockf(self.descriptor, fcntl.LOCK_UN, 1, key_offset(key))

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
                log.info(WAITING, self.path.parent)
            await asyncio.sleep(delay)  # another process holds it: see LONGEST_RETRY_S
            delay = min(delay * 2, LONGEST_RETRY_S)

    def release_all(self) -> None:
        """Release every claim this process still holds (closing the cache)."""
        for claim in list(self.held.values()):
            claim.release()

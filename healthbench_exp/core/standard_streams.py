"""Standard output and error that no one reads never stop or corrupt a run.

A run's output may be read by no one: a pipe whose reader is gone (`| head -3`), a terminal
that went away, a stream closed before the run started (`>&-`). Python ignores SIGPIPE, so a
write to a closed pipe raises BrokenPipeError wherever it happens: in the progress bar, a log
line, the end-of-run table, a W&B hint, or the interpreter's last flush at exit. `guard` handles
it once, at the entry point, for every writer of the process: each standard stream becomes a
`QuietStream`, which drops what it cannot write and points its file descriptor at /dev/null, as
the Python docs advise ("Note on SIGPIPE" in the `signal` module's docs), so later writes (by any
holder of the stream or of the descriptor, the final flush included) go nowhere instead of
failing. The run goes on: its files, status.json and exit code are what they would have been.

A standard descriptor closed before the start (`>&-`) is opened on /dev/null first: otherwise
the next file the run opens (its log, the response cache) would get its number and receive
whatever is printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO

STANDARD = ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w"))


class QuietStream:
    """A text stream that drops its writes once its reader is gone (`gone`); everything else is
    the wrapped stream's."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except (OSError, ValueError) as exc:
                self._lose(exc)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except (OSError, ValueError) as exc:
                self._lose(exc)

    def _lose(self, error: OSError | ValueError) -> None:
        """The reader is gone (any OSError: a closed pipe, a terminal gone, a full disk under a
        redirect; a ValueError only for a closed stream): drop what is written from now on, and
        point the descriptor at /dev/null, so that the buffered rest and other holders of the
        descriptor write there."""
        if isinstance(error, ValueError) and "closed" not in str(error):
            raise error
        self.gone = True
        with contextlib.suppress(OSError, ValueError):
            silence(self.stream.fileno())
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()  # what it buffered goes to /dev/null now

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def silence(fd: int) -> None:
    """Point the descriptor `fd` at /dev/null."""
    null = os.open(os.devnull, os.O_RDWR)
    try:
        if null != fd:
            os.dup2(null, fd)
    finally:
        if null != fd:
            os.close(null)


def guard() -> None:
    """Open closed standard descriptors on /dev/null, and make sys.stdout and sys.stderr
    `QuietStream`s (once: a second call changes nothing)."""
    for fd, name, mode in STANDARD:
        try:
            os.fstat(fd)
        except OSError:  # closed before the start: /dev/null, before any file can take it
            silence(fd)
            stream = open(fd, mode, encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
            setattr(sys, name, stream)
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, QuietStream):
            replace_unencodable(stream)
            setattr(sys, name, QuietStream(stream))


def replace_unencodable(stream: TextIO) -> None:
    """A stream in an encoding short of Unicode (`PYTHONIOENCODING=ascii`, `LC_ALL=C` without
    UTF-8 mode, Latin-1) writes a character it cannot encode (the table's `±`, a name's accent)
    as `?` instead of raising UnicodeEncodeError and losing the whole printout."""
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "").replace("_", "")
    if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
        with contextlib.suppress(OSError, ValueError):
            stream.reconfigure(errors="replace")

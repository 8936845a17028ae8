"""The pacer's clock: monotonic seconds and sleeping on them, injected so the pacing can be run
on a fake clock in tests (`testing/fake_clock.py`), deterministic and without waiting."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    """`now()`: monotonic seconds; `sleep(s)`: wait that many seconds of the same clock."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


SYSTEM_CLOCK = Clock()

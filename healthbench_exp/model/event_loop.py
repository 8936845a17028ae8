"""The asyncio event loop the harness runs on: uvloop where available, else the standard one."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop where it is installed (Linux, macOS), else None (asyncio's default): the
    loop of both the harness and this server, whose CPU per request it roughly halves."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop

"""Stop a run early when its judge has sent nothing but unparseable verdicts.

A judge that never follows the grader template (say, one that fences its JSON without the `json`
label, which the reference parse rejects) would otherwise be paid `1 + max_parse_retries` calls
per criterion for no verdict at all. `UnparseableWatch` counts the run's judge replies until the
first one parses; if the first `limit` replies all failed to parse (empty ones included), it raises
`UnparseableJudge`, quoting one of them, and the run stops. Until that first valid verdict, at
most `limit` judge calls are sent (calls that fail without a reply give their place back), so a
judge that never answers usably costs `limit` calls, not one per call the run could have in
flight; a working judge loses at most one round trip at the start. Once one verdict has parsed
the watch steps aside for good: from then on unparseable replies are resampled and, after the
retries, ungraded.
"""

from __future__ import annotations

import asyncio

from healthbench_exp.core.endpoint_errors import FatalEndpointError

SNIPPET_CHARS = 160


class UnparseableJudge(FatalEndpointError):
    """The judge's first replies were all unparseable: stop the run (status `ungraded`)."""


class UnparseableWatch:
    """Counts unparseable judge replies until the first valid verdict of the run.

    `limit`: how many unparseable replies, from the start of the run, stop it; 0 never.
    `gate`: until the first valid verdict, hold judge calls beyond the first `limit` (off for
    the Batch API, whose batch must hold every call).
    Call `await admit()` before a judge call while `armed`, and `record()` after it.
    """

    def __init__(self, limit: int, gate: bool = True) -> None:
        self.limit = limit
        self.gate = gate
        self.armed = limit > 0
        self.tripped = False
        self.unparseable = 0
        self.admitted = 0  # judge calls sent while armed, less those that got no reply
        self.example = ""  # one non-empty unparseable reply, quoted in the error
        self._waiters: list[asyncio.Future[None]] = []

    async def admit(self) -> None:
        """Wait while `limit` calls are out and no verdict has parsed yet; raise once tripped."""
        while self.gate and self.armed and not self.tripped and self.admitted >= self.limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        if self.tripped:
            raise UnparseableJudge(self.message())
        if self.armed:
            self.admitted += 1

    def record(self, reply: str | None, parsed: bool) -> None:
        """Note the end of one admitted call: its reply (None: the request failed) and whether
        it parsed; raise UnparseableJudge when the limit is reached."""
        if not self.armed:
            return
        if parsed:
            self.armed = False
        elif reply is None:
            self.admitted -= 1
        else:
            self.unparseable += 1
            if reply and not self.example:
                self.example = reply
            self.tripped = self.unparseable >= self.limit
        if self.tripped or not self.armed or reply is None:
            self._wake()  # the waiters go on, or make room, or stop
        if self.tripped:
            raise UnparseableJudge(self.message())

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def message(self) -> str:
        """One line: what happened, one raw reply, what to do."""
        quoted = (
            f"one of them: {self.example[:SNIPPET_CHARS]!r}" if self.example else "all were empty"
        )
        return (
            f"stopped early: the judge's first {self.unparseable} replies were all unparseable "
            f"({quoted}); a verdict must be a JSON object with a boolean 'criteria_met', bare or "
            "fenced as ```json. Check judge.name and judge.base_url, or set "
            "judge.early_stop_unparseable=0 to grade anyway"
        )

"""Stop a run early when its judge has sent nothing but unparseable verdicts.

A judge that never follows the grader template (say, one that fences its JSON without the `json`
label, which the reference parse rejects) would otherwise be paid `1 + max_parse_retries` calls
per criterion for no verdict at all. `UnparseableWatch` counts the run's judge replies until the
first one parses; if the first `limit` replies all failed to parse (empty ones included), it raises
`UnparseableJudge`, quoting one of them, and the run stops. Once one verdict has parsed it never
fires again: from then on unparseable replies are resampled and, after the retries, ungraded.
"""

from __future__ import annotations

from .endpoints import FatalEndpointError

SNIPPET_CHARS = 160


class UnparseableJudge(FatalEndpointError):
    """The judge's first replies were all unparseable: stop the run (status `ungraded`)."""


class UnparseableWatch:
    """Counts unparseable judge replies until the first valid verdict of the run.

    `limit`: how many unparseable replies in a row, from the start of the run, stop it; 0 never.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.unparseable = 0
        self.armed = limit > 0
        self.example = ""  # one non-empty unparseable reply, quoted in the error

    def record(self, reply: str, parsed: bool) -> None:
        """Note one judge reply; raise UnparseableJudge when the limit is reached."""
        if not self.armed:
            return
        if parsed:
            self.armed = False
            return
        self.unparseable += 1
        if reply and not self.example:
            self.example = reply
        if self.unparseable >= self.limit:
            raise UnparseableJudge(self.message())

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

"""A run's spend journal: what an invocation paid, written as its answers arrive, so that an
invocation killed without a word (SIGKILL: the OOM killer, a node failure, SLURM after its grace)
loses none of what it paid for.

`<run dir>/.spend` (`SPEND_JOURNAL`, written through `RunFiles.open_log`): an invocation's first
request appends a header line `{"journal": <id>, "started_at": <ISO 8601>}`; then one line per
request it sends (`{"s": <n>, "r": <role>, "c": <prompt characters>}`) and one per request that
ends with an answer (`{"e": <n>, "u": <the reply's usage>, "t": <its service tier>}`; `"u": null`
for an HTTP error). Each line is one write as it happens (no fsync: a killed process loses
nothing its kernel holds; a machine that loses power may lose the last lines). A request a stop
cancels is left open, as it is at a kill.

An invocation that ends any other way records its usage in `invocations.jsonl` with its journal's
id (`model.invocations.record_invocation`), and its journal is no longer read. The next
invocation (`resume=`) takes each journal whose id `invocations.jsonl` lacks as an invocation
that was killed (`killed_journals`): its answered requests are what it paid (counted as any
paid call, from their usage); its requests sent and never answered were in flight at the kill,
and whether the endpoint billed them is unknowable: they are counted as abandoned in flight, their
cost estimated apart (`model.costs`), never in the measured cost.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from healthbench_exp.core.run_files import SPEND_JOURNAL, RunFiles
from healthbench_exp.model.endpoint_stats import EndpointStats


class SpendJournal:
    """This invocation's journal (see the module docstring); opened at its first request."""

    def __init__(self, files: RunFiles) -> None:
        self.files = files
        self.id = uuid.uuid4().hex
        self.started_at = datetime.now(UTC).isoformat(timespec="seconds")
        self.sent_count = 0
        self.file: BinaryIO | None = None

    def _write(self, entry: Mapping[str, object]) -> None:
        if self.file is None:
            self.file = self.files.open_log(SPEND_JOURNAL)
            self._line({"journal": self.id, "started_at": self.started_at})
        self._line(entry)

    def _line(self, entry: Mapping[str, object]) -> None:
        assert self.file is not None
        self.file.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
        self.file.flush()  # one write: in the kernel's hands if the process is killed next

    def sent(self, role: str, prompt_chars: int) -> int:
        """Journal a request of `role` going out; return its number, for `ended`."""
        self.sent_count += 1
        self._write({"s": self.sent_count, "r": role, "c": prompt_chars})
        return self.sent_count

    def ended(
        self, number: int, usage: Mapping[str, object] | None, service_tier: str | None
    ) -> None:
        """Journal request `number` answered: with its `usage` when paid, None for an error."""
        self._write({"e": number, "u": usage, "t": service_tier})

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


@dataclass
class KilledJournal:
    """The journal of one invocation that recorded no usage: it was killed."""

    id: str
    started_at: str
    finished_at: str  # when the journal file was last written (about when it was killed)
    stats: dict[str, EndpointStats] = field(default_factory=dict)  # by role

    def counters(self, roles: list[str]) -> dict[str, object]:
        """The roles' counters as plain data (`OpenRoles.stats`'s shape): its paid calls, and
        its requests in flight at the kill as abandoned in flight."""
        return {name: asdict(self.stats.get(name, EndpointStats())) for name in roles}

    @property
    def wall_time_s(self) -> float:
        """Seconds from its start to its journal's last line (at most a second off)."""
        began = datetime.fromisoformat(self.started_at)
        return max(0.0, (datetime.fromisoformat(self.finished_at) - began).total_seconds())


def killed_journals(directory: Path, recorded: set[str]) -> list[KilledJournal]:
    """The journals in `directory`'s `SPEND_JOURNAL` whose id is not in `recorded` (the ids
    `invocations.jsonl` holds), oldest first, each with its counters; a line cut short by the
    kill is skipped."""
    path = directory / SPEND_JOURNAL
    if not path.is_file():
        return []
    finished = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
    journals: list[KilledJournal] = []
    current: KilledJournal | None = None
    open_requests: dict[int, tuple[str, int]] = {}  # number -> role, prompt characters
    for line in path.read_bytes().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        if "journal" in entry:
            _close(current, open_requests)
            journal = KilledJournal(str(entry["journal"]), str(entry["started_at"]), finished)
            current = None if journal.id in recorded else journal
            if current is not None:
                journals.append(current)
            open_requests = {}
        elif current is None:
            continue
        elif "s" in entry:
            open_requests[int(entry["s"])] = (str(entry["r"]), int(entry["c"]))
        elif "e" in entry and (request := open_requests.pop(int(entry["e"]), None)):
            usage = entry.get("u")
            if isinstance(usage, dict):
                stats = current.stats.setdefault(request[0], EndpointStats())
                tier = entry.get("t")
                stats.count_paid(usage, tier if isinstance(tier, str) else None)
    _close(current, open_requests)
    return journals


def _close(journal: KilledJournal | None, open_requests: Mapping[int, tuple[str, int]]) -> None:
    """Count `journal`'s requests still open at its end as abandoned in flight."""
    if journal is None:
        return
    for role, chars in open_requests.values():
        journal.stats.setdefault(role, EndpointStats()).count_abandoned(chars)

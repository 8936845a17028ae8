"""A run's invocations (the run and each `resume=` of it): each appends its own usage to
`<run dir>/invocations.jsonl` when it ends, a signal's stop included; one that was killed
(SIGKILL) is recorded by the next from its spend journal (`record_killed`). The run's usage is
the sum over them (`cumulative_usage`), tokens, cost and wall time alike, with the
per-invocation breakdown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from healthbench_exp.core.run_files import INVOCATIONS_FILE, RunFiles
from healthbench_exp.core.summary import USAGE_FIELDS
from healthbench_exp.core.usage_record import invocation_wall_s
from healthbench_exp.model.costs import sum_costs
from healthbench_exp.model.reply_json import json_map, tokens
from healthbench_exp.model.spend_journal import SPEND_JOURNAL, KilledJournal, killed_journals


def read_invocations(output_dir: Path) -> list[dict[str, object]]:
    """The invocations of the run in `output_dir` recorded so far, oldest first."""
    path = output_dir / INVOCATIONS_FILE
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry: object = json.loads(line)
        except json.JSONDecodeError:  # a line cut short by a kill: that invocation is lost
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def record_invocation(
    files: RunFiles,
    usage: Mapping[str, object],
    budget: object,
    started: datetime,
    measured: str,
    *,
    wall_time_s: float | None = None,
    journal: str | None = None,
    killed: KilledJournal | None = None,
) -> list[dict[str, object]]:
    """Append this invocation's `usage` (and `budget`, its `wall_time_s`, and the id of its
    spend journal: `model.spend_journal`) to the run's `invocations.jsonl` (through `files`);
    return the invocations of this run, this one last: the latest ones that measured the same
    thing (`measured`: a fingerprint of the config), so a directory reused for another config
    starts its sum afresh (the older lines stay in the file).

    `killed`: the journal of an earlier invocation that was killed, recorded as such by the
    invocation after it (its times from its journal, `killed: true`)."""
    previous = read_invocations(files.directory)
    entry: dict[str, object] = {
        "invocation": len(previous) + 1,
        "started_at": started.astimezone(UTC).isoformat(timespec="seconds"),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds")
        if killed is None
        else killed.finished_at,
        "measured_config_sha256": measured,
        "usage": usage,
        "budget": budget,
    }
    if wall_time_s is not None:
        entry["wall_time_s"] = round(wall_time_s, 3)
    if journal is not None:
        entry["journal"] = journal
    if killed is not None:
        entry["killed"] = True
    files.append_invocation(entry)
    same = [entry]
    for earlier in reversed(previous):
        if earlier.get("measured_config_sha256") != measured:
            break
        same.insert(0, earlier)
    return same


def record_killed(
    files: RunFiles,
    usage_of: Callable[[dict[str, object]], dict[str, object]],
    roles: list[str],
    measured: str,
) -> list[dict[str, object]]:
    """Record in `invocations.jsonl` each earlier invocation of the run in `files` that was
    killed before it could (its spend journal's id is not there: `model.spend_journal`), its
    usage `usage_of` its `roles`' counters from the journal: its answered requests paid, those
    in flight at the kill abandoned (their cost estimated apart). Then drop the journal file:
    every journal in it is recorded. Call before this invocation sends a request. Return the
    usage of each invocation recorded (none: nothing was killed)."""
    recorded = {str(e["journal"]) for e in read_invocations(files.directory) if "journal" in e}
    usages = []
    for journal in killed_journals(files.directory, recorded):
        usages.append(usage := usage_of(journal.counters(roles)))
        record_invocation(
            files,
            usage,
            None,
            datetime.fromisoformat(journal.started_at),
            measured,
            wall_time_s=journal.wall_time_s,
            journal=journal.id,
            killed=journal,
        )
    (files.directory / SPEND_JOURNAL).unlink(missing_ok=True)
    return usages


def _counters(entry: Mapping[str, object]) -> dict[str, object]:
    """A role's usage entry without its price."""
    return {k: v for k, v in entry.items() if k != "price"}


def cumulative_usage(invocations: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The usage of every invocation of a run, summed per role (prices: the last one's), with
    `invocations`: each one's counters and cost. A cost is None when any invocation's is."""
    usages = [json_map(i["usage"]) for i in invocations]
    last = usages[-1]
    usage: dict[str, object] = {}
    for role in ("model", "judge"):
        entries = [json_map(u[role]) for u in usages]
        summed: dict[str, object] = {
            name: sum(tokens(e, name) for e in entries) for name in USAGE_FIELDS
        }
        summed["cost_usd"] = sum_costs(e["cost_usd"] for e in entries)
        _sum_abandoned(entries, summed)
        tiers = _tier_counts(entries)
        if tiers:
            summed["service_tiers"] = tiers
        summed["price"] = json_map(last[role])["price"]
        usage[role] = summed
    last_jury = json_map(last.get("jury"))
    if last_jury:  # a jury's members: the same in every invocation
        jury: dict[str, object] = {}
        for name in last_jury:
            members = [json_map(json_map(u.get("jury")).get(name)) for u in usages]
            counted: dict[str, object] = {
                field: sum(tokens(e, field) for e in members) for field in USAGE_FIELDS
            }
            counted["cost_usd"] = sum_costs(e.get("cost_usd", 0.0) for e in members)
            _sum_abandoned(members, counted)
            if tiers := _tier_counts(members):
                counted["service_tiers"] = tiers
            jury[name] = {**counted, "price": json_map(last_jury[name])["price"]}
        usage["jury"] = jury
    usage["total_cost_usd"] = sum_costs(u["total_cost_usd"] for u in usages)
    if any("abandoned_cost_usd" in u for u in usages):  # estimated, apart from the total
        usage["abandoned_cost_usd"] = sum_costs(
            u["abandoned_cost_usd"] for u in usages if "abandoned_cost_usd" in u
        )
    usage["wall_time_s"] = round(sum(invocation_wall_s(i) for i in invocations), 3)
    usage["invocations"] = [
        {
            "invocation": i["invocation"],
            "started_at": i["started_at"],
            "finished_at": i["finished_at"],
            "wall_time_s": invocation_wall_s(i),
            **{k: i[k] for k in ("killed",) if k in i},
            **{role: _counters(json_map(u[role])) for role in ("model", "judge")},
            **(
                {
                    "jury": {
                        name: _counters(json_map(entry))
                        for name, entry in json_map(u["jury"]).items()
                    }
                }
                if u.get("jury")
                else {}
            ),
            "total_cost_usd": u["total_cost_usd"],
            **{k: u[k] for k in ("abandoned_cost_usd",) if k in u},  # estimated
            "budget": i["budget"],
        }
        for i, u in zip(invocations, usages, strict=True)
    ]
    return usage


def _sum_abandoned(entries: Sequence[Mapping[str, object]], into: dict[str, object]) -> None:
    """Sum the requests abandoned in flight of `entries` (one role's, over invocations; an
    older line has none) into `into`, when there were any."""
    count = sum(tokens(e, "abandoned_in_flight") for e in entries)
    if count:
        into["abandoned_in_flight"] = count
        into["abandoned_cost_usd"] = sum_costs(
            e.get("abandoned_cost_usd", 0.0) for e in entries if "abandoned_in_flight" in e
        )


def _tier_counts(entries: Iterable[Mapping[str, object]]) -> dict[str, int]:
    """The `service_tiers` counts of role entries, summed per tier."""
    counts: dict[str, int] = {}
    for entry in entries:
        for tier, count in json_map(entry.get("service_tiers")).items():
            counts[tier] = counts.get(tier, 0) + (count if isinstance(count, int) else 0)
    return counts

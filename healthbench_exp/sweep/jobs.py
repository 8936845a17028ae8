"""Finding and reading finished runs for a comparison, read-only.

A run directory is one holding `.hydra/overrides.yaml`, `status.json` or `summary.json` (a single
run's `outputs/<date>/<time>`, or one job of a sweep). Every other directory is searched below for
run directories (a sweep's `multirun/<date>/<time>`, or a folder of sweeps); nothing below a run
directory is searched. Nothing here writes.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from omegaconf import OmegaConf

from healthbench_exp.core.run_config import RunConfig
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import RunSummary, read_summary
from healthbench_exp.core.usage_record import Spend
from healthbench_exp.output.run_context import RunContext, abandoned_text, run_context
from healthbench_exp.sweep.planned import (
    FINISHED,
    NOT_STARTED,
    invocations_spend,
    planned_config,
    planned_jobs,
    swept_keys,
)

SEARCH_DEPTH = 4  # levels below a given directory searched for run directories
SKIPPED = {"wandb", "results", ".hydra", ".submitit", "__pycache__"}
SHORT_KEYS = {
    "sampling.temperature": "T",
    "model.name": "model",
    "judge.name": "judge",
    "dataset.difficulty": "difficulty",
    "sampling.num_examples": "n",
    "sampling.rollouts_per_example": "rollouts",
    "completions.path": "replies",
}


@dataclass
class Job:
    """One run as found on disk; `name` is unique among the runs compared."""

    name: str
    path: Path
    # completed | partial | dry_run | failed | unfinished | not_started (planned by the sweep,
    # never begun) | another final status (interrupted, ungraded)
    status: str
    error: str | None
    overrides: list[str]
    summary: RunSummary | None  # None: no readable summary.json (not finished, or a dry run)
    config: dict[str, object]  # as resolved, when the run's records hold it (else as composed)
    context: RunContext
    # what it paid over every invocation: cost, tokens, wall time and what it abandoned
    spend: Spend = field(default_factory=lambda: Spend(cost_usd=0.0, tokens=0, wall_time_s=0.0))

    @property
    def settings(self) -> RunConfig:
        """`config` as a typed record (the parts readers use)."""
        return RunConfig.of(self.config)


def read_json(path: Path) -> object:
    """A JSON file's content, or None when it is missing or unreadable."""
    try:
        data: object = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def read_object(path: Path) -> dict[str, object]:
    """The JSON object a file holds; {} when it is missing, unreadable or not an object."""
    data = read_json(path)
    return data if isinstance(data, dict) else {}


def is_run_dir(path: Path) -> bool:
    return any(
        (path / name).is_file() for name in (".hydra/overrides.yaml", "status.json", "summary.json")
    )


def _composed_config(path: Path, summary: RunSummary | None) -> dict[str, object]:
    """The run's config: from summary.json, a dry run's estimate, or `.hydra/config.yaml`."""
    if summary is not None and summary.config:
        return summary.config
    config = read_object(path / "estimate.json").get("config")
    if isinstance(config, dict):
        return config
    composed = path / ".hydra" / "config.yaml"
    if composed.is_file():
        try:
            plain = OmegaConf.to_container(OmegaConf.load(composed), resolve=False)
        except Exception:  # a damaged file: the run is still listed, without its config
            return {}
        return {str(k): v for k, v in plain.items()} if isinstance(plain, dict) else {}
    return {}


def load_job(path: Path, name: str | None = None) -> Job:
    """Read one run directory: its overrides, status, summary and context."""
    overrides_file = path / ".hydra" / "overrides.yaml"
    overrides = [str(o) for o in OmegaConf.load(overrides_file)] if overrides_file.exists() else []
    status = read_object(path / "status.json")
    summary = read_summary(path)
    state = status.get("status")
    kind: str  # a `core.run_end.Status`, or "unfinished" (killed, or still running)
    if state == Status.DRY_RUN and (path / "estimate.json").exists():
        kind = Status.DRY_RUN
    elif state in (None, Status.RUNNING):
        kind = Status.COMPLETED if summary is not None and state is None else "unfinished"
    else:
        kind = str(state)  # completed, partial, failed, or any other final status
    record = next((path / n for n in ("summary.json", "status.json") if (path / n).exists()), None)
    written_at = record.stat().st_mtime if record is not None else None
    unfinished = {"status": "unfinished", "error": "killed, or still running"}
    config = _composed_config(path, summary)
    context = run_context(
        summary, unfinished if kind == "unfinished" else status, config, written_at
    )
    spend = job_spend(path, summary)
    context = replace(  # one set of numbers: the context's cost is the spend's
        context,
        cost_usd=spend.cost_usd,
        abandoned=spend.abandoned,
        abandoned_cost_usd=spend.abandoned_cost_usd,
    )
    name = name or path.name
    error = status.get("error")
    error = None if error is None else str(error)
    return Job(name, path, kind, error, overrides, summary, config, context, spend)


def job_spend(path: Path, summary: RunSummary | None) -> Spend:
    """What the run in `path` paid over all its invocations: from its summary's usage (the
    sum over them), else (no summary: interrupted, killed, running; or one without usage)
    from `invocations.jsonl`."""
    if summary is not None and summary.usage is not None:
        wall = summary.counts.wall_time_s if summary.counts is not None else 0.0
        return Spend.of(summary.usage, wall)
    return invocations_spend(path)


def not_started_job(path: Path, overrides: list[str], config: dict[str, object], name: str) -> Job:
    """A job its sweep planned (`multirun.yaml`) that never began: no directory, nothing paid;
    `config` as far as the sweep's config tells it (`planned_config`)."""
    never = {"status": NOT_STARTED, "error": "never started"}
    context = replace(run_context(None, never, config, None), cost_usd=0.0)
    return Job(name, path, NOT_STARTED, "never started", overrides, None, config, context)


def _order(path: Path) -> tuple[bool, int, str]:
    return (not path.name.isdigit(), int(path.name) if path.name.isdigit() else 0, path.name)


def run_dirs_below(directory: Path, depth: int = SEARCH_DEPTH) -> list[Path]:
    """`directory` itself if it is a run directory, else the run directories below it, in job
    order (numbered jobs by number)."""
    if is_run_dir(directory):
        return [directory]
    if depth == 0:
        return []
    found = []
    children = [
        c
        for c in directory.iterdir()
        if c.is_dir() and c.name not in SKIPPED and not c.name.startswith(".")
    ]
    for child in sorted(children, key=_order):
        found += run_dirs_below(child, depth - 1)
    return found


def find_jobs(*inputs: Path) -> list[Job]:
    """Every run in or below the given directories, each once, named by its path relative to
    what the runs have in common (a single sweep's jobs: `0`, `1`, ...); a sweep directory's
    jobs that never started (planned in its `multirun.yaml`, no directory) as `not_started`."""
    paths: list[Path] = []
    missing: dict[Path, tuple[list[str], dict[str, object]]] = {}  # planned, without a folder
    for directory in inputs:
        found = run_dirs_below(directory)
        planned = planned_jobs(directory) or {}
        swept = swept_keys(list(planned.values()))
        every = sorted({*found, *planned}, key=lambda p: (p.parent, *_order(p)))
        for path in every if planned else found:
            if path.resolve() not in {p.resolve() for p in paths}:
                paths.append(path)
                if path not in found:
                    job = planned[path]
                    missing[path] = (job, planned_config(directory, job, swept))
    if not paths:
        return []
    resolved = [p.resolve() for p in paths]
    if len(paths) == 1:
        names = [paths[0].name]
    else:
        base = Path(os.path.commonpath(resolved))
        names = [r.relative_to(base).as_posix() for r in resolved]
    return [
        not_started_job(p, *missing[p], name=name) if p in missing else load_job(p, name)
        for p, name in zip(paths, names, strict=True)
    ]


def short_override(override: str) -> str:
    """`sampling.temperature=0.7` -> `T=0.7`; other dotted keys keep their last part."""
    key, _, value = override.partition("=")
    key = key.lstrip("+~")
    return f"{SHORT_KEYS.get(key, key.rsplit('.', 1)[-1])}={value}"


def job_labels(jobs: list[Job]) -> dict[str, str]:
    """Each job named by the overrides that set it apart (`model=gpt41 T=0.7`); a lone job by
    all its overrides; a job nothing sets apart by its name."""
    settings = [dict(o.lstrip("+~").partition("=")[::2] for o in j.overrides) for j in jobs]
    keys = {k for s in settings for k in s}
    varying = {k for k in keys if len({s.get(k) for s in settings}) > 1 or len(jobs) == 1}
    labels = {
        j.name: " ".join(
            short_override(o) for o in j.overrides if o.lstrip("+~").partition("=")[0] in varying
        )
        for j in jobs
    }
    seen: dict[str, int] = {}
    for label in labels.values():
        seen[label] = seen.get(label, 0) + 1
    return {
        name: (f"{label} ({name})" if label else name) if seen[label] > 1 or not label else label
        for name, label in labels.items()
    }


def _distinct(values: list[str | None]) -> str:
    """The distinct values in first-seen order, `; `-joined."""
    return "; ".join(dict.fromkeys(str(v) for v in values if v is not None)) or "–"


def sweep_context(jobs: list[Job]) -> dict[str, list[list[str]]]:
    """The header of a comparison: what its runs used (each distinct value once) and the banners
    of its runs, each naming the runs it concerns."""
    contexts = [j.context for j in jobs]
    dates = sorted(c.date for c in contexts if c.date)
    costs = [j.context.cost_usd for j in jobs if j.status != Status.DRY_RUN]
    paid = [j.context for j in jobs if j.status != Status.DRY_RUN]
    note = " (from illustrative prices)" if any(c.cost_note for c in paid) else ""
    by_status: dict[str, int] = defaultdict(int)
    for j in jobs:
        by_status[j.status] += 1
    protocols = [c.protocol for c in contexts if c.protocol != "unknown"]
    fields = [
        ("runs", f"{len(jobs)} ({', '.join(f'{n} {s}' for s, n in by_status.items())})"),
        ("model", _distinct([c.replies for c in contexts])),
        ("judge", _distinct([c.judge for c in contexts])),
        ("data", _distinct([c.data for c in contexts])),
        ("count", count_field(jobs)),
        ("sampling", _distinct([c.sampling for c in contexts])),
        ("date", _distinct([dates[0], dates[-1]]).replace("; ", " to ") if dates else "unknown"),
        ("cost", cost_field(total(costs), note, paid)),
        # each label lists its deviations `; `-joined: the jobs' distinct labels are ` | `-joined
        ("protocol", " | ".join(dict.fromkeys(protocols)) if protocols else "unknown"),
    ]
    named: dict[str, list[str]] = defaultdict(list)
    for j in jobs:
        for banner in j.context.banners:
            named[banner.label].append(j.name)
    reasons = {b.label: b.reason for j in jobs for b in j.context.banners if b.label == "DEMO"}
    banners = [
        [label, f"{reasons.get(label, 'see each run')}: {len(names)} of {len(jobs)} runs "
         f"({', '.join(names)})"]
        for label, names in named.items()
    ]  # fmt: skip
    return {"fields": [list(f) for f in fields], "banners": banners}


def cost_field(spent: float | None, note: str, paid: list[RunContext]) -> str:
    """The comparison's cost: measured (then `note`), and the estimate of what its jobs
    abandoned in flight, labelled, when they abandoned any."""
    cost = "unknown" if spent is None else f"${spent:.4f}{note}"
    abandoned = [c for c in paid if c.abandoned]
    if not abandoned:
        return cost
    estimate = total([c.abandoned_cost_usd for c in abandoned])
    return f"{cost}; + {abandoned_text(sum(c.abandoned for c in abandoned), estimate)}"


def count_field(jobs: list[Job]) -> str:
    """What the finished runs graded (each distinct count once), and how many runs did not
    finish (their rows are not in the comparison)."""
    done = [j.context.count for j in jobs if j.summary is not None and j.summary.counts]
    dry = all(j.status == Status.DRY_RUN for j in jobs)
    counted = _distinct(list(done)) if done else "not run" if dry else "none finished"
    short = sum(j.status not in FINISHED for j in jobs)
    return f"{counted}; {short} of {len(jobs)} runs not finished" if short else counted


def total(values: list[float | None]) -> float | None:
    """The sum, or None when there is nothing to sum or some value is unknown."""
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)

"""Weights & Biases: one run per Hydra job, opened and finished inside the job.

`wandb.mode=auto` (the default) goes online only when credentials exist (WANDB_API_KEY or a
netrc entry for the W&B host) and otherwise writes an offline run for `wandb sync` later; it
never prompts. Run files go to `$WANDB_DIR/wandb` if WANDB_DIR is set, else `<run dir>/wandb`.

What a run holds:
- config: the resolved Hydra config (it names API-key variables, never a key), the Hydra
  overrides, the harness version and git commit;
- history: live progress (`progress/*`) while examples finish;
- summary: every metric of summary.json under its reference name, plus `counts/*`;
- tables: `per_example`, `by_theme`, `by_axis`, `by_consensus_criterion` with bar charts;
- artifact `results-<run id>` (type `healthbench-results`): summary.json, the JSONL files, the HF
  results dataset and the `per_criterion` table (too large for `run.log`, which keeps 10,000 rows).
"""

from __future__ import annotations

import contextlib
import json
import logging
import netrc
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .config import CompletionSource, Config, TaskKind, WandbMode
from .scoring import tag_metric_names

if TYPE_CHECKING:
    from .runner import ExampleResult

log = logging.getLogger(__name__)

ARTIFACT_TYPE = "healthbench-results"
PROGRESS_EVERY_S = 5.0
TABLE_LOG_MAX_ROWS = 10_000  # what run.log keeps of a table
ARTIFACT_TABLE_MAX_ROWS = 200_000  # what one artifact table holds; larger ones are split


@dataclass
class JobContext:
    """What only Hydra knows about the job, as plain data."""

    overrides: list[str] = field(default_factory=list)
    sweep_dir: str | None = None  # set in a multirun: the sweep's directory


def resolve_mode(mode: WandbMode) -> str:
    """'online', 'offline' or 'disabled'; `auto` is online only with credentials."""
    if mode is not WandbMode.auto:
        return mode.value
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
    try:
        if netrc.netrc().authenticators(host):
            return "online"
    except (OSError, netrc.NetrcParseError):
        pass
    return "offline"


def default_run_name(config: Config) -> str:
    if config.task.kind is TaskKind.meta_eval:
        return f"meta_eval|judge={config.judge.name}|{config.dataset.difficulty}"
    temperature = "default" if config.sampling.temperature is None else config.sampling.temperature
    source = config.completions.source
    if source is CompletionSource.model:
        replies = config.model.name
    elif source is CompletionSource.file:
        replies = f"file:{Path(config.completions.path or '').name}"
    else:
        replies = f"{source.value}:group{config.completions.group}"
    return f"{replies}|judge={config.judge.name}|{config.dataset.difficulty}|T={temperature}"


def sweep_group(sweep_dir: str) -> str:
    """The W&B group of a sweep's jobs: its directory, e.g. `multirun/2026-11-22/10-00-00`."""
    path = Path(sweep_dir)
    with contextlib.suppress(ValueError):  # outside the working directory: keep it absolute
        path = path.resolve().relative_to(Path.cwd())
    return path.as_posix()[-128:]


def git_commit() -> str | None:
    """The commit of the harness source, when it runs from a git checkout."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout.strip() or None


class Tracker:
    """The job's W&B run; every method is a no-op when W&B is disabled.

    The run is opened in a background thread (`wandb.init` takes about a second of CPU) started
    when the first result arrives, so it does not compete with start-up for the interpreter: the
    first requests go out first. Progress is logged once it is open; `finish`, `fail` and
    `describe` wait for it (and open it, if no result ever arrived).
    """

    def __init__(self, open_run: Callable[[], Any] | None = None) -> None:
        self.run: Any | None = None
        self.error: BaseException | None = None
        self.open_run = open_run
        self.opener: threading.Thread | None = None
        self.done = self.failed = self.ungraded = self.requests = 0
        self.score_sum = 0.0
        self.scored = 0
        self.last_log = 0.0

    def _start_opening(self) -> None:
        if self.open_run is None:
            return
        open_run, self.open_run = self.open_run, None

        def target() -> None:
            try:
                self.run = open_run()
            except BaseException as exc:  # re-raised in the job's thread by wait()
                self.error = exc

        self.opener = threading.Thread(target=target, name="wandb-init", daemon=True)
        self.opener.start()

    def wait(self) -> Any | None:
        """The open run (None when disabled), once `wandb.init` has returned."""
        self._start_opening()
        if self.opener is not None:
            self.opener.join()
            self.opener = None
            if self.error is not None:
                raise self.error
        return self.run

    def _ready(self) -> bool:
        """Whether the run is open; never waits for `wandb.init`."""
        if self.opener is not None and not self.opener.is_alive():
            self.wait()
        return self.opener is None and self.run is not None

    def on_result(self, result: ExampleResult) -> None:
        """Count a finished example; log progress at most every PROGRESS_EVERY_S seconds."""
        self.failed += result.error is not None and not result.not_run  # as RunCounts
        self.ungraded += result.ungraded
        self.requests += result.sampled + sum(g.attempts for g in result.grades)
        if result.score is not None:
            self.scored += 1
            self.score_sum += result.score
        self._finished_one()

    def on_row(self, ungraded: bool, judge_replies: int) -> None:
        """Count a finished meta-eval row."""
        self.ungraded += ungraded
        self.requests += judge_replies
        self._finished_one()

    def _finished_one(self) -> None:
        self._start_opening()
        self.done += 1
        now = time.monotonic()
        if now - self.last_log >= PROGRESS_EVERY_S and self._ready():
            self.last_log = now
            self.log_progress()

    def log_progress(self) -> None:
        assert self.run is not None
        mean = self.score_sum / self.scored if self.scored else None
        self.run.log(
            {
                "progress/examples_done": self.done,
                "progress/running_mean_score": mean,
                "progress/requests": self.requests,
                "progress/failures": self.failed,
                "progress/ungraded_criteria": self.ungraded,
            }
        )

    def finish(self, summary: dict[str, Any], output_dir: Path) -> None:
        """Summary, tables, charts and the results artifact; then finish the run."""
        if self.wait() is None:
            return
        import wandb

        self.log_progress()
        self.run.summary.update({k: v for k, v in summary["metrics"].items() if v is not None})
        self.run.summary.update({f"counts/{k}": v for k, v in summary["counts"].items()})
        self.run.summary.update(usage_metrics(summary))
        self.run.summary.update({k: bool(summary.get(k)) for k in ("partial", "demo")})
        if summary.get("task") == "meta_eval":
            self._finish_meta_eval(summary, output_dir)
            return
        per_example = example_table(output_dir / "examples.jsonl")
        breakdowns = breakdown_tables(summary)
        logged: dict[str, Any] = dict(breakdowns)
        if len(per_example.data) <= TABLE_LOG_MAX_ROWS:
            logged["per_example"] = per_example
        for name, table in breakdowns.items():
            logged[f"{name}_chart"] = wandb.plot.bar(
                table, "name", "score", title=f"HealthBench score {name.replace('_', ' ')}"
            )
        self.run.log(logged)

        artifact = wandb.Artifact(f"results-{self.run.id}", type=ARTIFACT_TYPE)
        for name in ("summary.json", "per_criterion.jsonl", "examples.jsonl"):
            artifact.add_file(str(output_dir / name), name=name)
        artifact.add_dir(str(output_dir / "results"), name="results")
        artifact.add(example_table(output_dir / "examples.jsonl"), "per_example")  # not a reference
        for index, part in enumerate(criterion_tables(output_dir / "per_criterion.jsonl")):
            artifact.add(part, "per_criterion" if index == 0 else f"per_criterion_{index}")
        self.run.log_artifact(artifact)
        self.run.finish()

    def _finish_meta_eval(self, summary: dict[str, Any], output_dir: Path) -> None:
        """Tables by category and per physician, per-row verdicts, the results artifact."""
        import wandb

        assert self.run is not None
        by_category = meta_category_table(summary)
        per_row = meta_row_table(output_dir / "meta_eval.jsonl")
        logged: dict[str, Any] = {
            "by_category": by_category,
            "by_category_chart": wandb.plot.bar(
                by_category, "category", "model_f1_balanced", title="Judge balanced F1 by category"
            ),
            "per_physician": physician_table(summary),
        }
        if len(per_row.data) <= TABLE_LOG_MAX_ROWS:
            logged["per_row"] = per_row
        self.run.log(logged)
        artifact = wandb.Artifact(f"results-{self.run.id}", type=ARTIFACT_TYPE)
        for name in ("summary.json", "meta_eval.jsonl"):
            artifact.add_file(str(output_dir / name), name=name)
        artifact.add_dir(str(output_dir / "results"), name="results")
        artifact.add(meta_row_table(output_dir / "meta_eval.jsonl"), "per_row")  # not a reference
        self.run.log_artifact(artifact)
        self.run.finish()

    def describe(self) -> dict[str, Any] | None:
        """Where the run is, for summary.json."""
        if self.wait() is None:
            return None
        return {"run_id": self.run.id, "group": self.run.group, "project": self.run.project}

    def fail(self, error: BaseException | None = None) -> None:
        """Finish a run whose job raised, marked failed: exit code 1, or 128 + the signal's
        number for a run stopped by SIGINT/SIGTERM (`run_stops.RunInterrupted.exit_code`), so
        that `wandb sync` never uploads it as a finished run."""
        try:
            run = self.wait()
        except Exception:
            return  # it never opened
        if run is None:
            return
        try:
            run.finish(exit_code=getattr(error, "exit_code", 1))
        except Exception as exc:  # never hide the job's own error behind W&B's (a full disk)
            log.warning("could not finish the W&B run %s: %s", run.id, exc)


def usage_metrics(summary: dict[str, Any]) -> dict[str, Any]:
    """`cost/{model,judge,total}_usd` and `usage/<role>/<counter>` for the run summary."""
    from .costs import USAGE_FIELDS

    usage = summary.get("usage") or {}
    metrics: dict[str, Any] = {}
    if usage.get("total_cost_usd") is not None:
        metrics["cost/total_usd"] = usage["total_cost_usd"]
    for role in ("model", "judge"):
        entry = usage.get(role) or {}
        if entry.get("cost_usd") is not None:
            metrics[f"cost/{role}_usd"] = entry["cost_usd"]
        metrics.update({f"usage/{role}/{k}": entry[k] for k in USAGE_FIELDS if k in entry})
    return metrics


def start(
    config: Config, config_dict: dict[str, Any], output_dir: Path, job: JobContext
) -> Tracker:
    """Start opening the W&B run for this job (a no-op Tracker when disabled)."""
    mode = resolve_mode(config.wandb.mode)
    if mode == "disabled":
        return Tracker()
    return Tracker(lambda: open_run(config, config_dict, output_dir, job, mode))


def open_run(
    config: Config, config_dict: dict[str, Any], output_dir: Path, job: JobContext, mode: str
) -> Any:
    import wandb

    run_dir = Path(os.environ.get("WANDB_DIR") or output_dir)  # W&B adds its own wandb/ below
    run_dir.mkdir(parents=True, exist_ok=True)
    group = config.wandb.group or (sweep_group(job.sweep_dir) if job.sweep_dir else None)
    run = wandb.init(
        project=config.wandb.project,
        entity=config.wandb.entity,
        group=group,
        tags=list(config.wandb.tags),
        name=config.wandb.name or default_run_name(config),
        job_type=config.task.kind.value,
        config={
            **config_dict,
            "hydra_overrides": " ".join(job.overrides),
            "harness_version": __version__,
            "git_commit": git_commit(),
        },
        dir=str(run_dir),
        mode=mode,  # type: ignore[arg-type]
        reinit="create_new",
        settings=wandb.Settings(silent=True, console="off"),
    )
    log.info("W&B run %s (%s%s) in %s", run.id, mode, f", group {group}" if group else "", run_dir)
    return run


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            yield json.loads(line)


PER_CRITERION_COLUMNS = [
    "prompt_id", "rollout", "criterion_index", "criterion_id", "criterion", "points", "axis",
    "theme", "tags", "cluster", "consensus_theme", "consensus_behavior_category",
    "consensus_criterion", "criteria_met", "explanation", "judge_attempts", "error",
]  # fmt: skip
PER_EXAMPLE_COLUMNS = [
    "prompt_id", "theme", "rollout", "score", "reward", "completion", "ungraded_criteria", "error",
]  # fmt: skip


def criterion_tables(path: Path) -> Iterator[Any]:
    """per_criterion.jsonl as W&B tables of at most ARTIFACT_TABLE_MAX_ROWS rows each."""
    import wandb

    rows: list[list[Any]] = []
    for row in _jsonl(path):
        row["tags"] = ",".join(row["tags"])
        rows.append([row[c] for c in PER_CRITERION_COLUMNS])
        if len(rows) == ARTIFACT_TABLE_MAX_ROWS:
            yield wandb.Table(columns=PER_CRITERION_COLUMNS, data=rows, allow_mixed_types=True)
            rows = []
    if rows or path.stat().st_size == 0:
        yield wandb.Table(columns=PER_CRITERION_COLUMNS, data=rows, allow_mixed_types=True)


def example_table(path: Path) -> Any:
    import wandb

    data = [[row[c] for c in PER_EXAMPLE_COLUMNS] for row in _jsonl(path)]
    return wandb.Table(columns=PER_EXAMPLE_COLUMNS, data=data, allow_mixed_types=True)


def breakdown_tables(summary: dict[str, Any]) -> dict[str, Any]:
    """by_theme, by_axis, by_consensus_criterion: name, score, bootstrap_std, n_samples."""
    import wandb

    metrics = summary["metrics"]
    columns = ["name", "score", "bootstrap_std", "n_samples"]
    tables = {}
    for table_name, prefix in (("by_theme", "theme:"), ("by_axis", "axis:")):
        names = tag_metric_names(metrics, prefix)
        data = [
            [n[len(prefix) :], metrics[n], metrics[f"{n}:bootstrap_std"], metrics[f"{n}:n_samples"]]
            for n in names
        ]
        tables[table_name] = wandb.Table(columns=columns, data=data)
    consensus = [
        [
            f"{row['theme']} / {row['behavior_category']} / {row['criterion']}",
            row["score"],
            row["bootstrap_std"],
            row["n_samples"],
        ]
        for row in summary["consensus"]
    ]
    tables["by_consensus_criterion"] = wandb.Table(columns=columns, data=consensus)
    return tables


META_CATEGORY_COLUMNS = [
    "category", "model_f1_balanced", "model_n", "physicians_mean_f1_balanced",
    "physicians_weighted_mean_f1_balanced", "physicians", "rows", "rows_graded",
]  # fmt: skip
META_ROW_COLUMNS = [
    "prompt_id", "completion_id", "repeat", "category", "rubric", "criteria_met",
    "binary_labels", "explanation", "judge_attempts", "error",
]  # fmt: skip


def meta_category_table(summary: dict[str, Any]) -> Any:
    """The judge's and the physicians' balanced F1 per category (undefined: empty cell)."""
    import wandb

    data = [[row[c] for c in META_CATEGORY_COLUMNS] for row in summary["by_category"]]
    return wandb.Table(columns=META_CATEGORY_COLUMNS, data=data, allow_mixed_types=True)


def physician_table(summary: dict[str, Any]) -> Any:
    """Each physician's leave-one-out precision, recall and F1 (pos, neg, balanced), overall."""
    import wandb

    names = [f"pairwise_physician_{k}_{c}" for k in ("f1", "precision", "recall")
             for c in ("balanced", "pos", "neg")]  # fmt: skip
    columns = ["physician", *(n.removeprefix("pairwise_physician_") for n in names), "n_f1"]
    data = [
        [pid, *(m[n]["value"] for n in names), m["pairwise_physician_f1_balanced"]["n"]]
        for pid, m in summary["agreement"]["physicians"].items()
    ]
    return wandb.Table(columns=columns, data=data, allow_mixed_types=True)


def meta_row_table(path: Path) -> Any:
    import wandb

    data = []
    for row in _jsonl(path):
        row["binary_labels"] = ",".join("1" if x else "0" for x in row["binary_labels"])
        data.append([row[c] for c in META_ROW_COLUMNS])
    return wandb.Table(columns=META_ROW_COLUMNS, data=data, allow_mixed_types=True)

"""Comparing finished runs: one row per run, paired comparisons, judge agreement, reports.

    python -m healthbench_exp.aggregate multirun/2026-11-22/10-00-00
    python -m healthbench_exp.aggregate multirun/2026-11-22/10-00-00 outputs/2026-11-23/09-12-44 \
        --out comparisons/mini-vs-full

Inputs are read-only: any mix of sweep directories and run directories (a run directory is never
written into). The comparison (`sweep_summary.csv`, `.json`, `.md` and `report.html`) goes to
`--out`; without it, into the sweep directory when exactly one sweep directory was given, else
into a new folder `aggregates/<date>/<time>` named on screen. The Hydra callback
`SweepSummaryCallback` (registered in `conf/config.yaml`) writes a sweep's own when it ends.

Failed and unfinished runs appear as such; every run shows its headline metric first and its
protocol (the set's reference bundle, and its deviations). Every pair of completed eval runs on
the same examples (the same set and the same prompt_ids) gets a paired bootstrap of the score
difference (overall and per theme); a pair on different examples is listed with the reason it
was not compared. Every pair of
completed runs whose judges graded the same items (the same reply, or meta-eval row, against the
same criterion) gets the judges' agreement rate and Cohen's kappa over those items. A regrade
given with its source run (`regrade=<run dir>`) gets the two judges' agreement and the score
shift, regrade minus source, overall, by theme and by axis (`sweep.regrade_compare`). Runs are
labelled by the overrides that set them apart (`model=gpt41 T=0.7`).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path
from typing import NotRequired, TypedDict

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from healthbench_exp.core.intervals import normal_interval
from healthbench_exp.core.protocol_record import OVERALL_SCORE
from healthbench_exp.core.run_end import Exit, Status
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.grading.scoring import tag_metric_names
from healthbench_exp.output.files import write_json
from healthbench_exp.output.html.charts import number, text
from healthbench_exp.output.html.pages import sweep_report
from healthbench_exp.output.run_context import utc_date
from healthbench_exp.sweep.abandoned import abandoned_columns, abandoned_sums
from healthbench_exp.sweep.bridged import bridged_columns
from healthbench_exp.sweep.compare import judge_agreement, paired_comparisons
from healthbench_exp.sweep.estimates import sweep_estimate
from healthbench_exp.sweep.jobs import (
    Job,
    find_jobs,
    is_run_dir,
    job_labels,
    read_object,
    sweep_context,
    total,
)
from healthbench_exp.sweep.judge_table import judge_table
from healthbench_exp.sweep.jury import jury_columns
from healthbench_exp.sweep.markdown import markdown, write_csv
from healthbench_exp.sweep.out_folder import written_or_exit
from healthbench_exp.sweep.planned import NOT_STARTED, finish_command, unfinished_lines
from healthbench_exp.sweep.published import published_columns
from healthbench_exp.sweep.regrade_compare import regrade_comparisons


class SweepSummary(TypedDict):
    """A comparison as `summarize` builds it and `sweep_summary.json` holds it."""

    inputs: list[str]
    written_at: str | None
    context: dict[str, list[list[str]]]
    jobs: list[dict[str, object]]  # `job_row` of each run, and its `label`
    pairs: list[dict[str, object]]
    not_compared: list[dict[str, object]]
    judge_agreement: list[dict[str, object]]
    judge_table: list[dict[str, object]]
    regrades: list[dict[str, object]]
    failed: int
    cost_usd: float | None
    estimated_cost_usd: float | None
    estimated_usage: dict[str, dict[str, float | None]] | None
    # the jobs' requests abandoned in flight and their estimated cost, apart from `cost_usd`
    abandoned_in_flight: NotRequired[int]  # (`sweep.abandoned`): only when some job has them
    abandoned_cost_usd: NotRequired[float | None]
    cost_with_abandoned_usd: NotRequired[float | None]  # cost_usd + that estimate
    out_dir: NotRequired[str]  # set when it is written


def job_row(job: Job) -> dict[str, object]:
    """The flat summary row of one run: what defines it, its banners, then its results."""
    settings, context = job.settings, job.context
    row: dict[str, object] = {
        "job": job.name,
        "path": str(job.path.resolve()),
        "status": job.status,
        "banners": " ".join(b.label for b in context.banners),
        "error": job.error,
        "overrides": " ".join(job.overrides),
        "task": context.task,
        "replies": context.replies,
        "model": context.model,
        "judge": context.judge,
        "data": context.data,
        "difficulty": settings.dataset.difficulty if settings.dataset else None,
        "temperature": settings.sampling.temperature if settings.sampling else None,
        "date": context.date,
        **protocol_columns(job),
        "finish": finish_command(job.path, job.status, job.overrides, job.summary),
        **abandoned_columns(context),
    }
    summary = job.summary
    if job.status == Status.DRY_RUN:
        estimate = read_object(job.path / "estimate.json")
        return {**row, "estimated_cost_usd": estimate.get("total_cost_usd")}
    if summary is None or summary.counts is None:  # unfinished: what it paid so far
        return {**row, **spend_columns(job)}
    if summary.is_meta_eval:
        return {**row, **meta_eval_row(job)}
    counts, metrics = summary.eval_counts, summary.metrics
    score, std = metrics.get("overall_score"), metrics.get("overall_score:bootstrap_std")
    row.update(
        {
            "rollouts": counts.rollouts_per_example,
            "overall_score": score,
            "bootstrap_std": std,
            "n": metrics.get("overall_score:n_samples", 0),
            "ungraded_criteria": counts.ungraded_criteria,
            "rows_failed": counts.rows_failed,
            **spend_columns(job),
        }
    )
    if score is not None and std is not None:
        row["ci_low"], row["ci_high"] = normal_interval(score, std).as_list()
    if "length_adjusted_score" in metrics:
        row["length_adjusted_score"] = metrics["length_adjusted_score"]
    row.update(headline_columns(summary))
    row.update(jury_columns(summary))  # a jury run: its jury's overall score (SPEC 7.1)
    row.update(bridged_columns(summary) | published_columns(summary))  # + published numbers
    repeats = summary.repeats
    if repeats:
        row["run_to_run_std"] = repeats.run_to_run_std
        row.update({f"worst_at_{k}": v for k, v in repeats.worst_at_k.items()})
    for name in tag_metric_names(metrics, "theme:") + tag_metric_names(metrics, "axis:"):
        row[name] = metrics[name]
    row["files"] = {
        n: (job.path / n).exists() for n in ("report.html", "summary.json", "per_criterion.jsonl")
    }
    return row


def protocol_columns(job: Job) -> dict[str, object]:
    """`protocol` (the set's reference bundle), `reference` and `deviations` ("; "-joined) of
    a run whose summary records them; None each otherwise (unfinished, or an older version)."""
    protocol = job.summary.protocol if job.summary is not None else None
    if protocol is None or protocol.name is None:
        return {"protocol": None, "reference": None, "deviations": None}
    return {
        "protocol": protocol.name,
        "reference": protocol.reference,
        "deviations": "; ".join(protocol.deviations or []),
    }


def headline_columns(summary: RunSummary) -> dict[str, object]:
    """`headline` (the metric's name; `overall_score` for a summary that names none) and
    `headline_score`, `headline_std`, `headline_ci_low`, `headline_ci_high`."""
    name = summary.headline or OVERALL_SCORE
    value, std = summary.metrics.get(name), summary.metrics.get(f"{name}:bootstrap_std")
    row: dict[str, object] = {"headline": name, "headline_score": value, "headline_std": std}
    if value is not None and std is not None:
        row["headline_ci_low"], row["headline_ci_high"] = normal_interval(value, std).as_list()
    return row


def meta_eval_row(job: Job) -> dict[str, object]:
    """The sweep-summary columns of a completed meta-eval job."""
    assert job.summary is not None
    counts, metrics = job.summary.meta_counts, job.summary.metrics
    physicians = "physicians_weighted_mean:pairwise_physician_f1_balanced"
    return {
        "pairwise_model_f1_balanced": metrics.get("pairwise_model_f1_balanced"),
        "pairwise_model_f1_pos": metrics.get("pairwise_model_f1_pos"),
        "pairwise_model_f1_neg": metrics.get("pairwise_model_f1_neg"),
        "physicians_f1_balanced": metrics.get(physicians),
        "category_mean_model_f1_balanced": metrics.get("category_mean:pairwise_model_f1_balanced"),
        "category_mean_physicians_f1_balanced": metrics.get(f"category_mean:{physicians}"),
        "rows": counts.rows,
        "ungraded_rows": counts.rows_failed,
        **spend_columns(job),
        "files": {n: (job.path / n).exists() for n in ("report.html", "summary.json")},
    }


def spend_columns(job: Job) -> dict[str, object]:
    """`tokens`, `wall_time_s` and `cost_usd` (None: a price is missing) of a job, all over
    the same invocations (every one of the run's: `Job.spend`), and each endpoint's share of
    the cost when its summary has them. Its requests abandoned in flight, over the same
    invocations, are `abandoned_columns`."""
    spend = job.spend
    usage = job.summary.usage if job.summary is not None else None
    return {
        "tokens": spend.tokens,
        "wall_time_s": spend.wall_time_s,
        "cost_usd": spend.cost_usd,
        "model_cost_usd": usage.model.cost_usd if usage is not None else None,
        "judge_cost_usd": usage.judge.cost_usd if usage is not None else None,
    }


def summarize(inputs: list[Path]) -> SweepSummary:
    """The comparison of every run in or below `inputs` (read only)."""
    jobs = find_jobs(*inputs)
    labels = job_labels(jobs)
    rows = [{**job_row(j), "label": labels[j.name]} for j in jobs]
    pairs, not_compared = paired_comparisons(jobs, labels)
    return {
        "inputs": [str(p) for p in inputs],
        "written_at": utc_date(datetime.now().timestamp()),
        "context": sweep_context(jobs),
        "jobs": rows,
        "pairs": pairs,
        "not_compared": not_compared,
        "judge_agreement": judge_agreement(jobs, labels),
        "judge_table": judge_table(jobs, labels),
        "regrades": regrade_comparisons(jobs, labels),
        "failed": sum(r["status"] not in (Status.COMPLETED, Status.DRY_RUN) for r in rows),
        "cost_usd": total([number(r, "cost_usd") for r in rows if r["status"] != Status.DRY_RUN]),
        "estimated_cost_usd": total(
            [number(r, "estimated_cost_usd") for r in rows if r["status"] == Status.DRY_RUN]
        ),
        "estimated_usage": sweep_estimate(jobs),
        **abandoned_sums(rows),
    }


def write_summary(out_dir: Path, data: SweepSummary) -> None:
    """Write the csv, json, md and html files of a comparison into `out_dir`."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data["out_dir"] = str(out_dir)
    write_csv(out_dir / "sweep_summary.csv", data["jobs"])
    write_json(out_dir / "sweep_summary.json", data)
    (out_dir / "sweep_summary.md").write_text(markdown(data), encoding="utf-8")
    (out_dir / "report.html").write_text(sweep_report(data, out_dir), encoding="utf-8")


def write_sweep_summary(sweep_dir: Path) -> SweepSummary:
    """Summarize one sweep and write the comparison into the sweep directory."""
    data = summarize([sweep_dir])
    write_summary(sweep_dir, data)
    return data


class SweepSummaryCallback(Callback):
    """Writes the sweep summary when a multirun ends (`tell_sweep`); exits 1 if any job did
    not complete.

    Hydra turns exceptions from callbacks into warnings, so a failed sweep ends with SystemExit
    (after every job has run and the summary is written).
    """

    def on_multirun_end(self, config: DictConfig, **kwargs: object) -> None:
        if not tell_sweep(Path(config.hydra.sweep.dir)):
            raise SystemExit(Exit.ERROR)


def tell_sweep(sweep_dir: Path) -> bool:
    """Write the sweep's summary into `sweep_dir` and print it; for the jobs that did not
    complete (failed, partial, ungraded, interrupted, never started: every job its
    `multirun.yaml` planned), one error line naming them by status, then one line per job with
    the command that finishes it, last. True when every job completed."""
    data = write_sweep_summary(sweep_dir)
    print(markdown(data))
    print(f"sweep summary: {sweep_dir / 'sweep_summary.md'}; report: {sweep_dir / 'report.html'}")
    if data["estimated_cost_usd"] is not None:
        print(f"dry run: the sweep would cost about ${data['estimated_cost_usd']:.4f}")
    told = unfinished_told(data["jobs"])
    if told is None:
        return True
    print(f"error: {told}; see {sweep_dir / 'sweep_summary.md'}", file=sys.stderr)
    for line in unfinished_lines(data["jobs"]):
        print(line, file=sys.stderr)
    return False


def unfinished_told(rows: list[dict[str, object]]) -> str | None:
    """The jobs that did not complete, by status as the table names them (`1 of 4 jobs ended
    interrupted (1); 1 of 4 jobs ended not_started (3)`); None when every one completed."""
    unfinished: dict[str, list[str]] = {}  # status -> jobs
    for row in rows:
        if row["status"] not in (Status.COMPLETED, Status.DRY_RUN):
            unfinished.setdefault(text(row, "status"), []).append(text(row, "job"))
    if not unfinished:
        return None
    return "; ".join(
        f"{len(jobs)} of {len(rows)} jobs "
        f"{'' if status in (Status.FAILED, NOT_STARTED) else 'ended '}{status.replace('_', ' ')} "
        f"({', '.join(jobs)})"
        for status, jobs in unfinished.items()
    )


EXAMPLES = """examples:
  python -m healthbench_exp.aggregate multirun/2026-11-22/10-00-00
      compare the jobs of one sweep; the summary goes into that sweep directory
  python -m healthbench_exp.aggregate outputs/2026-11-23/09-12-44 outputs/2026-11-23/11-40-02
      compare two single runs; the summary goes into a new folder aggregates/<date>/<time>
  python -m healthbench_exp.aggregate multirun/2026-11-22/10-00-00 outputs/2026-11-23/09-12-44 \\
      --out comparisons/gpt41-vs-mini
      a sweep and a run, compared in the folder you name

Run directories are only read, never written. Writes sweep_summary.csv/.json/.md and report.html.
Exit status 1 while a run is unfinished or a sweep's job never started (each listed with
the command that finishes it), 2 when there is nothing to compare."""


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m healthbench_exp.aggregate",
        description="Compare finished HealthBench runs: one row per run (labelled by the\n"
        "overrides that set it apart), paired score differences, judge agreement, and an\n"
        "HTML report. Failed and unfinished runs are listed as such.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "dirs",
        nargs="+",
        metavar="DIR",
        type=Path,
        help="a sweep directory (multirun/<date>/<time>), a run directory "
        "(outputs/<date>/<time>, or one job of a sweep), or a folder holding either; any mix",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="where to write the comparison (created if missing; never inside a run directory). "
        "Default: the sweep directory when exactly one sweep directory is given, else a new "
        "folder aggregates/<date>/<time>",
    )
    return parser.parse_args(argv)


def new_out_dir(root: Path = Path("aggregates")) -> Path:
    """A folder `aggregates/<date>/<time>` that does not exist yet (suffixed -2, -3, ...)."""
    now = datetime.now()
    base = root / now.strftime("%Y-%m-%d") / now.strftime("%H-%M-%S")
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def choose_out_dir(inputs: list[Path], out: Path | None, runs: list[Path]) -> Path:
    """Where the comparison goes (see `parse_args`); SystemExit(Exit.REFUSED) if `out` is a run
    directory or inside one."""
    if out is not None:
        target = out.resolve()
        for run in runs:
            if target == run.resolve() or run.resolve() in target.parents:
                _fail(f"--out {out} is inside the run directory {run}; runs are read-only, "
                      "choose a folder outside it")  # fmt: skip
        return out
    if len(inputs) == 1 and not is_run_dir(inputs[0]):
        return inputs[0]
    return new_out_dir()


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(Exit.REFUSED)


def main(argv: list[str] | None = None) -> None:
    """The command line: see `parse_args` and the module docstring."""
    args = parse_args(sys.argv[1:] if argv is None else argv)
    for directory in args.dirs:
        if not directory.is_dir():
            _fail(f"{directory} is not a directory; give sweep or run directories")
    data = summarize(args.dirs)
    if not data["jobs"]:
        _fail(
            f"nothing to aggregate in {', '.join(map(str, args.dirs))}: no run directory (one "
            "with .hydra/overrides.yaml, status.json or summary.json) in or below it"
        )
    out_dir = choose_out_dir(args.dirs, args.out, [Path(text(r, "path")) for r in data["jobs"]])
    written_or_exit(lambda: write_summary(out_dir, data), out_dir)  # or one line, exit 2
    print(markdown(data))
    print(f"written: {out_dir}/sweep_summary.{{csv,json,md}} and {out_dir}/report.html")
    told = unfinished_told(data["jobs"])
    if told is not None:  # a comparison of what finished: not the whole sweep yet
        print(f"error: {told}", file=sys.stderr)
        for line in unfinished_lines(data["jobs"]):
            print(line, file=sys.stderr)
        raise SystemExit(Exit.ERROR)


if __name__ == "__main__":
    main()

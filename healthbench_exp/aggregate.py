"""Sweep summaries: one row per job, paired comparisons, and an HTML report.

Written when a sweep ends (the Hydra callback `SweepSummaryCallback`, registered in
`conf/config.yaml`) and on demand for partial or failed sweeps:

    python -m healthbench_exp.aggregate multirun/2026-11-22/10-00-00

Outputs in the sweep directory: `sweep_summary.csv`, `.json`, `.md` and `report.html`. Failed
and unfinished jobs appear as such. Every pair of completed eval jobs that scored shared
prompt_ids gets a paired bootstrap of the score difference (overall and per theme). Every pair of
completed jobs whose judges graded the same items (the same reply, or meta-eval row, against the
same criterion) gets the judges' agreement rate and Cohen's kappa over those items.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from .agreement import cohen_agreement
from .comparison import paired_bootstrap
from .reporting import write_json
from .scoring import ci95, tag_metric_names

BOOTSTRAP_SAMPLES = 1000
SEED = 0


@dataclass
class Job:
    name: str
    path: Path
    status: str  # completed | partial (budget reached) | dry_run | failed | ungraded | unfinished
    error: str | None
    overrides: list[str]
    summary: dict[str, Any] | None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def load_job(path: Path) -> Job:
    from omegaconf import OmegaConf

    overrides_file = path / ".hydra" / "overrides.yaml"
    overrides = [str(o) for o in OmegaConf.load(overrides_file)] if overrides_file.exists() else []
    status = _read_json(path / "status.json") or {}
    summary = _read_json(path / "summary.json")
    state = status.get("status")
    if state in ("failed", "ungraded"):  # ungraded: see `outcome`
        kind = state
    elif summary is not None and state in (None, "completed", "partial"):
        kind = state or "completed"
    elif state == "dry_run" and (path / "estimate.json").exists():
        kind = "dry_run"
    else:
        kind = "unfinished"  # killed, or still running
    return Job(path.name, path, kind, status.get("error"), overrides, summary)


def find_jobs(sweep_dir: Path) -> list[Job]:
    """Every job folder (one holding `.hydra/`) below the sweep directory, in job order."""
    paths = [p.parent.parent for p in sweep_dir.glob("*/.hydra/overrides.yaml")]
    return [
        load_job(p)
        for p in sorted(
            paths,
            key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
        )
    ]


def job_row(job: Job) -> dict[str, Any]:
    """The flat sweep-summary row of one job."""
    row: dict[str, Any] = {
        "job": job.name,
        "status": job.status,
        "error": job.error,
        "overrides": " ".join(job.overrides),
    }
    summary = job.summary
    if job.status == "dry_run":
        estimate = _read_json(job.path / "estimate.json") or {}
        return {**row, "estimated_cost_usd": estimate.get("total_cost_usd")}
    if summary is None or job.status not in ("completed", "partial"):
        return row
    config, counts, metrics = summary["config"], summary["counts"], summary["metrics"]
    if summary.get("task") == "meta_eval":
        return {**row, **meta_eval_row(job)}
    row.update(
        {
            "task": "eval",
            "replies": (summary.get("completions") or {}).get("source", "model"),
            "model": config.get("model", {}).get("name"),
            "judge": config.get("judge", {}).get("name"),
            "difficulty": config.get("dataset", {}).get("difficulty"),
            "temperature": config.get("sampling", {}).get("temperature"),
            "rollouts": counts["rollouts_per_example"],
            "overall_score": metrics.get("overall_score"),
            "bootstrap_std": metrics.get("overall_score:bootstrap_std"),
            "n": metrics.get("overall_score:n_samples", 0),
            "ungraded_criteria": counts["ungraded_criteria"],
            "rows_failed": counts["rows_failed"],
            "tokens": sum(
                counts[f"{r}_{k}_tokens"]
                for r in ("model", "judge")
                for k in ("prompt", "completion")
            ),
            "wall_time_s": counts["wall_time_s"],
            **job_costs(summary),
        }
    )
    if row["overall_score"] is not None:
        std = row["bootstrap_std"]
        row["ci_low"], row["ci_high"] = ci95(row["overall_score"], std)
    if "length_adjusted_score" in metrics:
        row["length_adjusted_score"] = metrics["length_adjusted_score"]
    repeats = summary.get("repeats")
    if repeats:
        row["run_to_run_std"] = repeats["run_to_run_std"]
        row.update({f"worst_at_{k}": v for k, v in repeats["worst_at_k"].items()})
    for name in tag_metric_names(metrics, "theme:") + tag_metric_names(metrics, "axis:"):
        row[name] = metrics[name]
    row["files"] = {
        n: (job.path / n).exists() for n in ("report.html", "summary.json", "per_criterion.jsonl")
    }
    return row


def meta_eval_row(job: Job) -> dict[str, Any]:
    """The sweep-summary columns of a completed meta-eval job."""
    assert job.summary is not None
    config, counts, metrics = job.summary["config"], job.summary["counts"], job.summary["metrics"]
    physicians = "physicians_weighted_mean:pairwise_physician_f1_balanced"
    return {
        "task": "meta_eval",
        "judge": config.get("judge", {}).get("name"),
        "difficulty": config.get("dataset", {}).get("difficulty"),
        "pairwise_model_f1_balanced": metrics.get("pairwise_model_f1_balanced"),
        "pairwise_model_f1_pos": metrics.get("pairwise_model_f1_pos"),
        "pairwise_model_f1_neg": metrics.get("pairwise_model_f1_neg"),
        "physicians_f1_balanced": metrics.get(physicians),
        "category_mean_model_f1_balanced": metrics.get("category_mean:pairwise_model_f1_balanced"),
        "category_mean_physicians_f1_balanced": metrics.get(f"category_mean:{physicians}"),
        "rows": counts["rows"],
        "ungraded_rows": counts["rows_failed"],
        "tokens": counts["judge_prompt_tokens"] + counts["judge_completion_tokens"],
        "wall_time_s": counts["wall_time_s"],
        **job_costs(job.summary),
        "files": {n: (job.path / n).exists() for n in ("report.html", "summary.json")},
    }


def job_costs(summary: dict[str, Any]) -> dict[str, Any]:
    """`cost_usd` (None: a price is missing) and each endpoint's share."""
    usage = summary.get("usage") or {}
    return {
        "cost_usd": usage.get("total_cost_usd"),
        "model_cost_usd": (usage.get("model") or {}).get("cost_usd"),
        "judge_cost_usd": (usage.get("judge") or {}).get("cost_usd"),
    }


def judge_verdicts(job: Job) -> dict[tuple[Any, ...], bool | None]:
    """Each item the job's judge graded -> its verdict (None: ungraded).

    An item is (prompt_id, rollout, criterion, the reply's sha256) for an eval, and (prompt_id,
    completion_id, repeat, rubric) for a meta-eval, so two jobs share an item only when their
    judges saw the same reply and criterion.
    """
    verdicts: dict[tuple[Any, ...], bool | None] = {}
    if (job.path / "meta_eval.jsonl").exists():
        with open(job.path / "meta_eval.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                key = ("meta", r["prompt_id"], r["completion_id"], r["repeat"], r["rubric"])
                verdicts[key] = r["criteria_met"]
        return verdicts
    replies: dict[tuple[str, int], str] = {}
    with open(job.path / "examples.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if r["completion"] is not None:
                digest = hashlib.sha256(r["completion"].encode("utf-8")).hexdigest()
                replies[r["prompt_id"], r["rollout"]] = digest
    with open(job.path / "per_criterion.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            reply = replies.get((r["prompt_id"], r["rollout"]))
            if reply is not None:
                key = ("eval", r["prompt_id"], r["rollout"], r["criterion_id"], reply)
                verdicts[key] = r["criteria_met"]
    return verdicts


def judge_agreement(jobs: list[Job]) -> list[dict[str, Any]]:
    """Agreement rate and Cohen's kappa for every pair of completed jobs with shared items,
    over the items both judges graded."""
    done = [
        j
        for j in jobs
        if j.status == "completed"
        and ((j.path / "meta_eval.jsonl").exists() or (j.path / "per_criterion.jsonl").exists())
    ]
    verdicts = {j.name: judge_verdicts(j) for j in done}
    pairs = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            va, vb = verdicts[a.name], verdicts[b.name]
            shared = va.keys() & vb.keys()
            if not shared:
                continue
            both = [(va[k], vb[k]) for k in shared if va[k] is not None and vb[k] is not None]
            result = cohen_agreement(both)  # type: ignore[arg-type]
            judges = [
                (j.summary or {}).get("config", {}).get("judge", {}).get("name") for j in (a, b)
            ]
            pairs.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "a_judge": judges[0],
                    "b_judge": judges[1],
                    "shared_items": len(shared),
                    **result.__dict__,
                }
            )
    return pairs


def prompt_scores(job: Job) -> tuple[dict[str, float], dict[str, str]]:
    """Per prompt_id: the mean example score over its scored rollouts, and its theme."""
    totals: dict[str, list[float]] = defaultdict(list)
    themes: dict[str, str] = {}
    with open(job.path / "examples.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["score"] is not None:
                totals[row["prompt_id"]].append(row["score"])
                themes[row["prompt_id"]] = row["theme"]
    return {p: sum(s) / len(s) for p, s in totals.items()}, themes


def pairwise(jobs: list[Job]) -> list[dict[str, Any]]:
    """Paired bootstrap A - B for every pair of completed jobs with shared prompt_ids."""
    done = [j for j in jobs if j.status == "completed" and (j.path / "examples.jsonl").exists()]
    scores = {j.name: prompt_scores(j) for j in done}
    pairs = []
    for i, a in enumerate(done):
        for b in done[i + 1 :]:
            (sa, themes), (sb, _) = scores[a.name], scores[b.name]
            overall = paired_bootstrap(sa, sb, BOOTSTRAP_SAMPLES, SEED)
            if overall is None:
                continue
            by_theme = {}
            for theme in sorted({themes[p] for p in set(sa) & set(sb)}):
                in_theme = {p for p in sa if themes[p] == theme}
                diff = paired_bootstrap(
                    {p: sa[p] for p in in_theme},
                    {p: sb[p] for p in in_theme if p in sb},
                    BOOTSTRAP_SAMPLES,
                    SEED,
                )
                if diff is not None:
                    by_theme[theme] = diff.__dict__
            pairs.append(
                {
                    "a": a.name,
                    "b": b.name,
                    "a_overrides": " ".join(a.overrides),
                    "b_overrides": " ".join(b.overrides),
                    **overall.__dict__,
                    "themes": by_theme,
                }
            )
    return pairs


def job_labels(jobs: list[Job]) -> dict[str, str]:
    """Each job named by the overrides that differ across the sweep, e.g. `1: model.name=x`."""
    settings = [dict(o.partition("=")[::2] for o in j.overrides) for j in jobs]
    keys = {k for s in settings for k in s}
    varying = {k for k in keys if len({s.get(k) for s in settings}) > 1}
    return {
        j.name: " ".join(
            [f"{j.name}:", *(o for o in j.overrides if o.partition("=")[0] in varying)]
        )
        for j in jobs
    }


def summarize_sweep(sweep_dir: Path) -> dict[str, Any]:
    jobs = find_jobs(sweep_dir)
    labels = job_labels(jobs)
    rows = [{**job_row(j), "label": labels[j.name]} for j in jobs]
    return {
        "sweep_dir": str(sweep_dir),
        "jobs": rows,
        "pairs": pairwise(jobs),
        "judge_agreement": judge_agreement(jobs),
        "failed": sum(r["status"] not in ("completed", "dry_run") for r in rows),
        "cost_usd": _total([r.get("cost_usd") for r in rows if r["status"] != "dry_run"]),
        "estimated_cost_usd": _total(
            [r.get("estimated_cost_usd") for r in rows if r["status"] == "dry_run"]
        ),
    }


def _total(values: list[float | None]) -> float | None:
    """The sum, or None when there is nothing to sum or some value is unknown."""
    if not values or any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def markdown(data: dict[str, Any]) -> str:
    lines = [f"# HealthBench sweep `{data['sweep_dir']}`"]
    evals = [r for r in data["jobs"] if r.get("task") != "meta_eval"]
    if evals:
        lines += [
            "",
            "| job | status | overrides | overall_score | 95% CI | n | ungraded | tokens "
            "| cost $ | wall s |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
    for r in evals:
        if r["status"] == "completed" and r.get("overall_score") is not None:
            score = f"{r['overall_score']:.4f} ± {r['bootstrap_std']:.4f}"
            ci = f"{r['ci_low']:.4f}–{r['ci_high']:.4f}"
            rest = (
                f"{r['n']} | {r['ungraded_criteria']} | {r['tokens']} | {_usd(r['cost_usd'])} | "
                f"{r['wall_time_s']:.1f}"
            )
        elif r["status"] == "dry_run":
            score, ci = "–", f"dry run: estimated {_usd(r.get('estimated_cost_usd'))}"
            rest = "– | – | – | – | –"
        else:
            score, ci, rest = "–", (r.get("error") or "").replace("|", "\\|"), "– | – | – | – | –"
        lines.append(
            f"| {r['job']} | {r['status']} | `{r['overrides']}` | {score} | {ci} | {rest} |"
        )
    meta = [r for r in data["jobs"] if r.get("task") == "meta_eval"]
    if meta:
        lines += [
            "",
            "## Meta-eval jobs (agreement with physicians, pairwise balanced F1)",
            "",
            "| job | judge | judge F1 | physicians F1 | mean over categories: judge, physicians "
            "| rows | ungraded |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in meta:
            lines.append(
                f"| {r['job']} | {r['judge']} | {_num(r['pairwise_model_f1_balanced'])} | "
                f"{_num(r['physicians_f1_balanced'])} | "
                f"{_num(r['category_mean_model_f1_balanced'])}, "
                f"{_num(r['category_mean_physicians_f1_balanced'])} | {r['rows']} | "
                f"{r['ungraded_rows']} |"
            )
    if data["judge_agreement"]:
        lines += [
            "",
            "## Judge agreement (items both jobs' judges graded)",
            "",
            "| A | B | judges | n | agreement | Cohen's kappa |",
            "|---|---|---|---|---|---|",
        ]
        for p in data["judge_agreement"]:
            lines.append(
                f"| {p['a']} | {p['b']} | {p['a_judge']} vs {p['b_judge']} | {p['n']} | "
                f"{_num(p['agreement'])} | {_num(p['kappa'])} |"
            )
    if data.get("cost_usd") is not None:
        lines += ["", f"Cost of the sweep: {_usd(data['cost_usd'])}"]
    if data.get("estimated_cost_usd") is not None:
        lines += ["", f"Estimated cost of the sweep (dry run): {_usd(data['estimated_cost_usd'])}"]
    if data["pairs"]:
        lines += [
            "",
            "## Paired differences (A − B)",
            "",
            "| A | B | n | mean diff | 95% CI | sign flips |",
            "|---|---|---|---|---|---|",
        ]
        for p in data["pairs"]:
            lines.append(
                f"| {p['a']} | {p['b']} | {p['n']} | {p['mean_difference']:+.4f} | "
                f"{p['ci_low']:+.4f} – {p['ci_high']:+.4f} | {p['sign_flip_fraction']:.3f} |"
            )
    return "\n".join(lines) + "\n"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _num(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns and k != "files"]
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def write_sweep_summary(sweep_dir: Path) -> dict[str, Any]:
    """Summarize the sweep and write the csv, json, md and html files into it."""
    from .html_report import sweep_report

    data = summarize_sweep(sweep_dir)
    write_csv(sweep_dir / "sweep_summary.csv", data["jobs"])
    write_json(sweep_dir / "sweep_summary.json", data)
    (sweep_dir / "sweep_summary.md").write_text(markdown(data), encoding="utf-8")
    (sweep_dir / "report.html").write_text(sweep_report(data), encoding="utf-8")
    return data


class SweepSummaryCallback(Callback):
    """Writes the sweep summary when a multirun ends; exits 1 if any job failed.

    Hydra turns exceptions from callbacks into warnings, so a failed sweep ends with SystemExit
    (after every job has run and the summary is written).
    """

    def on_multirun_end(self, config: Any, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        data = write_sweep_summary(sweep_dir)
        print(markdown(data))
        print(
            f"sweep summary: {sweep_dir / 'sweep_summary.md'}; report: {sweep_dir / 'report.html'}"
        )
        if data["estimated_cost_usd"] is not None:
            print(f"dry run: the sweep would cost about ${data['estimated_cost_usd']:.4f}")
        failed = [r["job"] for r in data["jobs"] if r["status"] not in ("completed", "dry_run")]
        if failed:
            print(
                f"error: {len(failed)} of {len(data['jobs'])} jobs failed ({', '.join(failed)}); "
                f"see {sweep_dir / 'sweep_summary.md'}",
                file=sys.stderr,
            )
            raise SystemExit(1)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("usage: python -m healthbench_exp.aggregate SWEEP_DIR", file=sys.stderr)
        raise SystemExit(2)
    sweep_dir = Path(args[0])
    data = write_sweep_summary(sweep_dir)
    if not data["jobs"]:
        print(f"error: no job folders (with .hydra/) in {sweep_dir}", file=sys.stderr)
        raise SystemExit(2)
    print(markdown(data))
    print(f"written: {sweep_dir}/sweep_summary.{{csv,json,md}} and report.html")


if __name__ == "__main__":
    main()

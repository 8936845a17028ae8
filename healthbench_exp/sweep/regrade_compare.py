"""A regrade beside its source run: the two judges' agreement and the score shift.

A regrade (`python -m healthbench_exp regrade=<run dir> judge=...`, `cli.regrade`) grades the
source run's own replies, so the two runs differ only in their judge. When `aggregate` is given
both (the regrade names its source in `summary.completions.regrade_of`), it reports:

- `agreement`: over the criteria both judges graded (the same prompt_id, rollout and criterion,
  both verdicts given): `n`, the share with the same verdict and Cohen's kappa (source = A,
  regrade = B), with each judge's met rate, and the same `by` each `axis:` of the criteria and
  each `theme:` of the examples;
- `shift`: the score shift, regrade minus source, overall, by theme and by axis, each with a
  paired bootstrap interval (`grading.comparison.paired_bootstrap`: examples resampled with
  replacement, the same draw for both runs, 1000 resamples, seed 0, the 2.5/97.5 percentiles).
  An example's overall and theme score is its examples.jsonl score (averaged over rollouts);
  its axis score is the reference's per-tag score over the criteria of that axis
  (`grading.scoring.example_score`), averaged over rollouts.

A regrade whose source is not among the compared runs (or did not complete) is listed with
the reason. Everything is read from the runs' files; nothing is written into a run.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from healthbench_exp.core.run_end import Status
from healthbench_exp.grading.agreement import cohen_agreement
from healthbench_exp.grading.comparison import paired_bootstrap
from healthbench_exp.grading.jury import pair_stats
from healthbench_exp.grading.scoring import example_score
from healthbench_exp.sweep.jobs import Job

BOOTSTRAP_SAMPLES = 1000
SEED = 0

Verdicts = dict[tuple[str, int, str], bool | None]


def _lines(path: Path) -> list[dict[str, object]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def criterion_verdicts(run: Path) -> Verdicts:
    """(prompt_id, rollout, criterion_id) -> the judge's verdict (None: ungraded)."""
    return graded_criteria(run)[0]


def graded_criteria(run: Path) -> tuple[Verdicts, dict[tuple[str, int, str], str]]:
    """One read of per_criterion.jsonl: each criterion's verdict (None: ungraded), keyed by
    (prompt_id, rollout, criterion_id), and the axis of each criterion that has one."""
    verdicts: Verdicts = {}
    axes: dict[tuple[str, int, str], str] = {}
    for r in _lines(run / "per_criterion.jsonl"):
        met = r["criteria_met"]
        key = (str(r["prompt_id"]), int(str(r["rollout"])), str(r["criterion_id"]))
        verdicts[key] = met if isinstance(met, bool) else None
        if r.get("axis"):
            axes[key] = str(r["axis"])
    return verdicts, axes


def agreement_by(
    graded: dict[tuple[str, int, str], tuple[bool, bool]],
    axes: dict[tuple[str, int, str], str],
    themes: dict[str, str],
) -> dict[str, dict[str, object]]:
    """The two judges' agreement (n, share equal, kappa) by `axis:` and by `theme:` slice."""
    slices: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for key, pair in graded.items():
        if key in axes:
            slices[f"axis:{axes[key]}"].append(pair)
        if themes.get(key[0]):
            slices[f"theme:{themes[key[0]]}"].append(pair)
    return {name: asdict(pair_stats(pairs)) for name, pairs in sorted(slices.items())}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def example_scores(run: Path) -> tuple[dict[str, float], dict[str, str]]:
    """prompt_id -> its score averaged over its scored rollouts; prompt_id -> its theme."""
    scores: dict[str, list[float]] = defaultdict(list)
    themes: dict[str, str] = {}
    for r in _lines(run / "examples.jsonl"):
        score = r["score"]
        if isinstance(score, int | float):
            scores[str(r["prompt_id"])].append(float(score))
            themes[str(r["prompt_id"])] = str(r.get("theme") or "")
    return {p: _mean(s) for p, s in scores.items()}, themes


def axis_scores(run: Path) -> dict[str, dict[str, float]]:
    """axis -> prompt_id -> the example's score over that axis's criteria, averaged over
    rollouts (examples whose graded criteria of the axis have no positive points left out)."""
    rows: dict[tuple[str, int, str], tuple[list[float], list[bool | None]]] = {}
    for r in _lines(run / "per_criterion.jsonl"):
        if not r.get("axis"):
            continue
        key = (str(r["prompt_id"]), int(str(r["rollout"])), str(r["axis"]))
        points, met = rows.setdefault(key, ([], []))
        points.append(float(str(r["points"])))
        verdict = r["criteria_met"]
        met.append(verdict if isinstance(verdict, bool) else None)
    by_axis: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (prompt_id, _, axis), (points, met) in rows.items():
        score = example_score(points, met)
        if score is not None:
            by_axis[axis][prompt_id].append(score)
    return {a: {p: _mean(s) for p, s in scores.items()} for a, scores in by_axis.items()}


def _shift(regrade: dict[str, float], source: dict[str, float]) -> dict[str, object] | None:
    diff = paired_bootstrap(regrade, source, BOOTSTRAP_SAMPLES, SEED)
    return None if diff is None else dict(diff.record())


def compare_regrade(source: Path, regrade: Path) -> dict[str, object]:
    """The agreement and the score shift (regrade minus source) of a regrade and its source."""
    (a, source_axes_of), b = graded_criteria(source), criterion_verdicts(regrade)
    graded: dict[tuple[str, int, str], tuple[bool, bool]] = {}
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        if x is not None and y is not None:
            graded[key] = (x, y)
    agreement = cohen_agreement(graded.values())
    source_scores, themes = example_scores(source)
    regrade_scores, _ = example_scores(regrade)
    by_theme: dict[str, object] = {}
    for theme in sorted(set(themes.values()) - {""}):
        in_theme = {p: s for p, s in source_scores.items() if themes[p] == theme}
        shift = _shift(regrade_scores, in_theme)
        if shift is not None:
            by_theme[theme] = shift
    source_axes, regrade_axes = axis_scores(source), axis_scores(regrade)
    by_axis: dict[str, object] = {}
    for axis in sorted(source_axes.keys() & regrade_axes.keys()):
        shift = _shift(regrade_axes[axis], source_axes[axis])
        if shift is not None:
            by_axis[axis] = shift
    return {
        "agreement": {
            "n": agreement.n,
            "agreement": agreement.agreement,
            "kappa": agreement.kappa,
            "source_met_rate": agreement.a_met_rate,
            "regrade_met_rate": agreement.b_met_rate,
            "by": agreement_by(graded, source_axes_of, themes),
        },
        "shift": {
            "overall": _shift(regrade_scores, source_scores),
            "themes": by_theme,
            "axes": by_axis,
        },
        "bootstrap": {"samples": BOOTSTRAP_SAMPLES, "seed": SEED, "percentiles": [2.5, 97.5]},
    }


def _judge(job: Job) -> str | None:
    judge = job.settings.judge
    return judge.name if judge is not None else None


def regrade_comparisons(jobs: list[Job], labels: dict[str, str]) -> list[dict[str, object]]:
    """One entry per completed regrade among `jobs`: compared with its source when the source
    is among them and completed, else the reason it was not."""
    by_path = {j.path.resolve(): j for j in jobs}
    entries: list[dict[str, object]] = []
    for job in jobs:
        completions = job.summary.completions if job.summary is not None else None
        origin = completions.regrade_of if completions is not None else None
        if job.status != Status.COMPLETED or not origin:
            continue
        source_path = Path(str(origin.get("run"))).resolve()
        entry: dict[str, object] = {
            "regrade": job.name,
            "regrade_label": labels[job.name],
            "regrade_judge": _judge(job),
            "source_run": str(source_path),
            "source_judge": origin.get("judge"),
            "model": origin.get("model"),
        }
        source = by_path.get(source_path)
        if source is None or source.status != Status.COMPLETED:
            why = "not among the runs compared" if source is None else f"status {source.status}"
            entries.append({**entry, "compared": False, "reason": f"the source run is {why}"})
            continue
        compared = compare_regrade(source.path, job.path)
        source_label = labels[source.name]
        entries.append(
            {**entry, "source": source.name, "source_label": source_label, "compared": True}
            | compared
        )
    return entries


def _num(value: object, signed: bool = False) -> str:
    if not isinstance(value, int | float):
        return "—"
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _shift_row(name: str, shift: object) -> str:
    if not isinstance(shift, dict):
        return f"| {name} | — | — | — |"
    interval = f"{_num(shift['ci_low'], True)} – {_num(shift['ci_high'], True)}"
    return f"| {name} | {shift['n']} | {_num(shift['mean_difference'], True)} | {interval} |"


def regrade_markdown(entries: Sequence[Mapping[str, object]]) -> list[str]:
    """The comparison's markdown section of every regrade (none: no lines)."""
    if not entries:
        return []
    lines = ["", "## Regrades: the judges' agreement and the score shift (regrade − source)"]
    for e in entries:
        title = f"`{e['regrade']}`: judge {e['source_judge']} -> {e['regrade_judge']}"
        lines += ["", f"### {title}", "", f"Source run: `{e['source_run']}` (model {e['model']})."]
        if not e.get("compared"):
            lines += ["", f"Not compared: {e['reason']}."]
            continue
        agreement = e["agreement"]
        assert isinstance(agreement, dict)
        lines += [
            "",
            f"Agreement on the {agreement['n']} criteria both judges graded: "
            f"{_num(agreement['agreement'])} equal, Cohen's kappa {_num(agreement['kappa'])} "
            f"(met rates {_num(agreement['source_met_rate'])} -> "
            f"{_num(agreement['regrade_met_rate'])}).",
            "",
            "| slice | n | agreement | kappa |",
            "|---|---|---|---|",
            *(
                f"| {name} | {v['n']} | {_num(v['agreement'])} | {_num(v['kappa'])} |"
                for name, v in agreement["by"].items()
            ),
            "",
            "| score | n | shift | 95% CI (paired bootstrap) |",
            "|---|---|---|---|",
        ]
        shift = e["shift"]
        assert isinstance(shift, dict)
        lines.append(_shift_row("overall", shift["overall"]))
        for kind in ("themes", "axes"):
            prefix = "theme" if kind == "themes" else "axis"
            lines += [_shift_row(f"{prefix}:{k}", v) for k, v in shift[kind].items()]
    return lines

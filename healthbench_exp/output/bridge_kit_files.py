"""The bridge kit's own files (not a run's): the sample as HealthBench JSONL, the judge preset
that sends the new judge's calls through the Batch API, and the bridge's check across its
sources (`bridge_check.json`, with its lines for the console); and the lines of its dry run,
read from each model's `estimate.json`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from healthbench_exp.core.bridged import BridgeCheck
from healthbench_exp.core.types import Example
from healthbench_exp.output.bridged_text import transport_text


def example_row(example: Example) -> dict[str, object]:
    """An example as a row of the 2025 HealthBench schema (what `dataset.path` reads)."""
    return {
        "prompt": [dict(m) for m in example.prompt],
        "prompt_id": example.prompt_id,
        "rubrics": [
            {"criterion": c.text, "points": c.points, "tags": list(c.tags)} for c in example.rubrics
        ],
        "example_tags": list(example.example_tags),
        "ideal_completions_data": (
            None if example.ideal_completions_data is None else dict(example.ideal_completions_data)
        ),
    }


def write_sample(path: Path, examples: Sequence[Example]) -> Path:
    """The examples as JSONL at `path` (a new file; its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "x", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps(example_row(example), ensure_ascii=False) + "\n")
    return path


def write_batch_preset(conf_dir: Path, preset: str) -> str:
    """`<conf_dir>/judge/<preset>_batch.yaml`: the preset `preset` with `batch: true` (the same
    model name and verdict settings); its name."""
    name = f"{preset}_batch"
    folder = conf_dir / "judge"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.yaml").write_text(
        f"defaults:\n  - {preset}\nbatch: true\n", encoding="utf-8"
    )
    return name


def write_check(path: Path, check: BridgeCheck) -> Path:
    """`bridge_check.json` (`core.bridged.BridgeCheck`)."""
    path.write_text(json.dumps(check.to_dict(), indent=2) + "\n", encoding="utf-8")
    return path


def check_lines(check: BridgeCheck) -> list[str]:
    """Each source left out, per method: the bridged score from the others against the
    reference grader's own, and whether its interval holds it; each method's spread cells
    beyond the bridge's interval, or its refusal; each stratum whose verdict rare in the other
    sources' replies a source's replies get far more often (`BridgeCheck.rare_verdicts`)."""
    lines = [f"leave one model out ({len(check.bridge)} sources, {check.pairs} pairs):"]
    for t in check.transport:
        text = transport_text(t) or t.refused or "not scored"
        lines.append(f"  {t.method} {t.model}: {text}")
    for method, cells in check.spread.items():
        beyond = sum(c.beyond_interval for c in cells)
        lines.append(
            f"  {method}: {beyond} of {len(cells)} cells differ between sources beyond "
            "the bridge's interval"
        )
    lines += [f"  {method}: refused: {why}" for method, why in check.refused.items()]
    lines += [
        f"  {r.source}: {r.stratum} {r.sign}: the reference grader's '{r.verdict}' in "
        f"{r.run_share:.3f} of its pairs, {r.bridge_share:.3f} ({r.bridge_n} pairs) in the "
        "others': a run like it rests on the pooled rate there; add bridge replies of that kind"
        for r in check.rare_verdicts
    ]
    return lines


def _estimate(run_dir: Path) -> dict[str, object]:
    """A dry run's `estimate.json` ({} when it cannot be read)."""
    try:
        estimate = json.loads((run_dir / "estimate.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return estimate if isinstance(estimate, dict) else {}


def _usd(costs: Sequence[object]) -> str:
    """The sum of `costs`, or why there is none (a cost missing)."""
    known = [c for c in costs if isinstance(c, int | float)]
    return f"${sum(known):,.2f}" if len(known) == len(costs) else "n/a (a price is missing)"


def dry_run_lines(runs: Sequence[Path], pilot: int) -> list[str]:
    """Each model's dry run (its folder's name): the estimated cost still to pay, and their
    total; after a pilot (`dry_run.pilot=N`), what the pilots sent and paid (estimate.json's
    `pilot`), which the kit's run reuses from the response cache."""
    estimates = [_estimate(run_dir) for run_dir in runs]
    costs = [e.get("total_cost_usd") for e in estimates]
    shown = ", ".join(
        f"{r.name}: " + (f"${c:,.2f}" if isinstance(c, int | float) else "n/a")
        for r, c in zip(runs, costs, strict=True)
    )
    lines = [f"bridge kit dry run: {shown}; in all {_usd(costs)}"]
    if pilot:
        records = [e.get("pilot") for e in estimates]
        sent = [r for r in records if isinstance(r, dict)]
        calls = sum(int(r.get("requests") or 0) for r in sent)
        paid = _usd([r.get("cost_usd") for r in sent] if len(sent) == len(runs) else [None])
        lines.append(
            f"  the pilot (dry_run.pilot={pilot}) sent each model's first {pilot} rows for "
            f"real: {calls} paid calls, {paid}; the kit's run on the same sample (the same "
            "data, examples= and seed=) and response cache reuses them: the costs above are "
            "what it still pays"
        )
    return lines

"""Shared pieces of the bridge tests: synthetic HealthBench data, the CLI runs on the built-in
endpoint, and an independent hand computation of the bridged score (the docs/bridge.md recipe,
written here with plain loops, not the package's code).

The built-in endpoint's judges: the reference grader `gpt-4.1-2025-04-14` says the base verdict
(flip rate 0); the new judge `offline-judge` is lenient (`judge_lenient_rates`): it also says
met where the base verdict says not met, at LENIENT.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from tests.e2e.test_e2e import run_cli

OLD = "gpt-4.1-2025-04-14"
NEW = "offline-judge"
LENIENT = 0.3
JUDGES = (
    "experiment=demo",
    "wandb=disabled",
    "runner.progress=false",
    f"offline_server.judge_flip_rates='{OLD}=0'",
    f"offline_server.judge_lenient_rates='{NEW}={LENIENT}'",
)
AS_OLD = ("judge=offline", f"judge.name={OLD}")  # the reference grader, on the built-in endpoint

AXES = ("accuracy", "completeness", "context_awareness")


def write_data(path: Path, name: str, examples: int, extra_axis: str | None = None) -> Path:
    """`examples` synthetic rows: 4 positive criteria on the first axes, 1 negative on
    accuracy, 1 consensus criterion of a cluster shared by a few rows; `extra_axis`: one more
    positive criterion on an axis the other set never has."""
    lines = []
    for i in range(examples):
        rubrics = [
            {
                "criterion": f"{name} {i}: states point {j} clearly.",
                "points": 3 + (i + j) % 6,
                "tags": ["level:example", f"axis:{AXES[j % 3]}"],
            }
            for j in range(4)
        ]
        rubrics.append(
            {
                "criterion": f"{name} {i}: recommends something unsafe.",
                "points": -(2 + i % 7),
                "tags": ["level:example", "axis:accuracy"],
            }
        )
        if i % 10 == 0:
            rubrics.append(
                {
                    "criterion": "Seeks the context needed to answer safely.",
                    "points": 5,
                    "tags": [
                        "level:cluster",
                        "cluster:context_seeking_enough-context_precise",
                        "axis:context_awareness",
                    ],
                }
            )
        if extra_axis is not None:
            rubrics.append(
                {
                    "criterion": f"{name} {i}: is easy to read.",
                    "points": 4,
                    "tags": ["level:example", f"axis:{extra_axis}"],
                }
            )
        theme = ("communication", "hedging", "global_health")[i % 3]
        lines.append(
            json.dumps(
                {
                    "prompt": [{"role": "user", "content": f"{name} question {i}: my head hurts."}],
                    "prompt_id": f"{name}-{i:04d}",
                    "rubrics": rubrics,
                    "example_tags": [f"theme:{theme}"],
                    "ideal_completions_data": None,
                    "canary": "synthetic",
                }
            )
        )
    file = path / f"{name}.jsonl"
    file.write_text("\n".join(lines) + "\n")
    return file


def run(directory: Path, cache: Path, *args: str) -> Path:
    """One CLI run into `directory`; asserts it completed."""
    result = run_cli(
        *JUDGES, *args, f"hydra.run.dir={directory}", env={"HEALTHBENCH_CACHE_DIR": str(cache)}
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return directory


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stratum(tags: list[str]) -> str:
    clusters = [t for t in tags if t.startswith("cluster:")]
    axes = [t for t in tags if t.startswith("axis:")]
    return clusters[0] if clusters else axes[0] if axes else "none"


def bridge_pairs(source: Path) -> list[tuple[str, bool, bool, bool, float, str]]:
    """(stratum, positive, new verdict, old verdict, points, example) of each criterion both
    judges graded, from a jury run's per_criterion.jsonl."""
    out = []
    for r in lines(source / "per_criterion.jsonl"):
        old, new = r["verdicts"].get(OLD), r["verdicts"].get(NEW)
        if isinstance(old, bool) and isinstance(new, bool):
            key = f"{r['prompt_id']}:{r['rollout']}"
            out.append((stratum(r["tags"]), r["points"] > 0, new, old, r["points"], key))
    return out


def q_table(pairs: list, strata: set[tuple[str, bool]]) -> dict[tuple[str, bool, bool], float]:
    """q per (stratum, positive, new verdict): Jeffreys, or the sign's pooled cell under 30."""
    n: dict = defaultdict(int)
    k: dict = defaultdict(int)
    for s, positive, new, old, _, _ in pairs:
        for key in ((s, positive, new), ("*", positive, new)):
            n[key] += 1
            k[key] += old
    table = {}
    for s, positive in strata:
        for new in (True, False):
            cell = (s, positive, new)
            use = cell if n[cell] >= 30 else ("*", positive, new)
            table[cell] = (k[use] + 0.5) / (n[use] + 1)
    return table


def bridged_by_hand(run_dir: Path, pairs: list, tag: str | None = None) -> float:
    """The run's bridged_score (or `bridged:<tag>`): each example's sum(points * q) / positive
    points over its graded criteria (with an axis tag: those with the tag only; with a theme
    tag: the examples of that theme), the mean over examples, clipped to [0, 1]."""
    rows = lines(run_dir / "per_criterion.jsonl")
    strata = {(stratum(r["tags"]), r["points"] > 0) for r in rows}
    strata |= {(p[0], p[1]) for p in pairs}
    q = q_table(pairs, strata)
    num: dict = defaultdict(float)
    den: dict = defaultdict(float)
    for r in rows:
        if not isinstance(r["criteria_met"], bool):
            continue
        if tag is not None and tag not in r["tags"] and tag != f"theme:{r['theme']}":
            continue
        key = (r["prompt_id"], r["rollout"])
        num[key] += r["points"] * q[(stratum(r["tags"]), r["points"] > 0, r["criteria_met"])]
        den[key] += max(0, r["points"])
    scores = [num[key] / den[key] for key in den if den[key] > 0]
    return min(1.0, max(0.0, sum(scores) / len(scores)))

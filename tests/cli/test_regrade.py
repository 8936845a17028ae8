"""`regrade=<run dir>` end to end, and `aggregate` over a run and its regrades.

One small eval run (5 rows of the bundled sample) against a loopback built-in endpoint that
counts model and judge requests (its verdicts hash the judge's name, so two judge names
disagree), then two regrades of it: with its own judge and with another. The source directory
is hashed before and after: a regrade only reads it.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from healthbench_exp.builtin_endpoint.server import server_args
from tests.conftest import LoopbackServer
from tests.e2e.test_e2e import run_cli, run_module
from tests.zygote import ForkedServer

REPO = Path(__file__).resolve().parents[2]
KEYS = {"HB_MODEL_KEY": "model-secret", "HB_JUDGE_KEY": "judge-secret"}


def endpoint_args(url: str) -> list[str]:
    return [
        "experiment=demo", "wandb=disabled", "runner.progress=false", "sampling.num_examples=5",
        "model=openai_compatible", "model.name=offline-model", f"model.base_url={url}",
        "model.api_key_env=HB_MODEL_KEY", "judge=openai_compatible", "judge.name=judge-a",
        f"judge.base_url={url}", "judge.api_key_env=HB_JUDGE_KEY",
    ]  # fmt: skip


def file_hashes(directory: Path) -> dict[str, str]:
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@dataclass(frozen=True)
class Runs:
    root: Path
    server: LoopbackServer
    source: Path
    same: Path  # regraded by the source's own judge
    other: Path  # regraded by judge-b
    requests: dict[str, dict[str, int]]  # per regrade: the server's counts during it
    source_hashes: tuple[dict[str, str], dict[str, str]]  # before and after the regrades


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("regrade")
    env = {"HEALTHBENCH_CACHE_DIR": str(root / "cache")}
    with ForkedServer(server_args()) as process:
        server = LoopbackServer(process)
        source = root / "source"
        result = run_cli(
            *endpoint_args(server.base_url), f"hydra.run.dir={source}", env={**env, **KEYS}
        )
        assert result.returncode == 0, result.stderr
        before = file_hashes(source)
        # the other judge: a preset of the user's own, from a config directory of theirs
        preset = root / "conf" / "judge" / "judge_b.yaml"
        preset.parent.mkdir(parents=True)
        preset.write_text(
            (REPO / "healthbench_exp/conf/judge/openai_compatible.yaml").read_text()
            .replace("name: ???", "name: judge-b")
            .replace("http://localhost:8000/v1", server.base_url)
            .replace("api_key_env: null", "api_key_env: HB_JUDGE_KEY")
        )  # fmt: skip
        other = ["judge=judge_b", f"hydra.searchpath=[file://{root / 'conf'}]"]
        requests = {}
        # "again": the regrade regraded by its own judge, a preset found where it found it
        cases = (("same", source, []), ("other", source, other), ("again", root / "other", []))
        for name, regraded, judge in cases:
            server.reset()
            result = run_cli(  # no model key: a regrade calls no model
                f"regrade={regraded}", *judge, f"hydra.run.dir={root / name}",
                env={**env, "HB_JUDGE_KEY": KEYS["HB_JUDGE_KEY"]},
            )  # fmt: skip
            assert result.returncode == 0, result.stderr
            requests[name] = server.stats()
        yield Runs(
            root, server, source, root / "same", root / "other", requests,
            (before, file_hashes(source)),
        )  # fmt: skip


def test_a_regrade_by_the_same_judge_reproduces_the_run_with_no_model_call(runs: Runs) -> None:
    source = json.loads((runs.source / "summary.json").read_text())
    same = json.loads((runs.same / "summary.json").read_text())
    assert same["metrics"] == source["metrics"]  # bootstrap stds too: the same rows, in order
    assert runs.requests["same"]["model_requests"] == 0
    assert runs.requests["other"]["model_requests"] == 0
    assert runs.source_hashes[0] == runs.source_hashes[1]  # the source is only read
    assert same["completions"]["regrade_of"] == {
        "run": str(runs.source.resolve()),
        "model": "offline-model",
        "judge": "judge-a",
        "overall_score": source["metrics"]["overall_score"],
    }
    assert same["protocol"]["regrade_of"] == str(runs.source.resolve())
    other = json.loads((runs.other / "summary.json").read_text())
    assert other["config"]["judge"]["name"] == "judge-b"
    again = json.loads((runs.root / "again" / "summary.json").read_text())
    assert again["metrics"] == other["metrics"] and again["config"]["judge"]["name"] == "judge-b"
    assert runs.requests["again"]["requests"] == 0  # the cache answers judge-b's verdicts
    assert other["config"]["model"]["name"] == "offline-model"  # the source's, recorded
    criteria = source["counts"]["criteria"]
    assert runs.requests["other"]["judge_requests"] == criteria  # every criterion, once
    assert other["metrics"]["overall_score"] != source["metrics"]["overall_score"]
    replies = sorted(
        (r["prompt_id"], r["completion"]) for r in jsonl(runs.source / "examples.jsonl")
    )
    assert sorted(
        (r["prompt_id"], r["completion"]) for r in jsonl(runs.other / "examples.jsonl")
    ) == (replies)


def _clipped(values: list[float]) -> float:
    return min(1.0, max(0.0, sum(values) / len(values)))


def _axis_scores(run: Path) -> dict[str, dict[str, float]]:
    """axis -> prompt_id -> achieved / positive points over the axis's criteria (1 rollout)."""
    points: dict[tuple[str, str], list[tuple[float, bool]]] = defaultdict(list)
    for r in jsonl(run / "per_criterion.jsonl"):
        points[r["axis"], r["prompt_id"]].append((r["points"], r["criteria_met"]))
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    for (axis, prompt_id), items in points.items():
        possible = sum(p for p, _ in items if p > 0)
        if possible:
            scores[axis][prompt_id] = sum(p for p, met in items if met) / possible
    return scores


def test_aggregate_reports_the_agreement_and_the_score_shift(runs: Runs) -> None:
    out = runs.root / "comparison"
    result = run_module(
        "healthbench_exp.aggregate", str(runs.source), str(runs.same), str(runs.other),
        "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    entries = {e["regrade"]: e for e in json.loads((out / "sweep_summary.json").read_text())[
        "regrades"]}  # fmt: skip
    same, other = entries["same"], entries["other"]
    assert same["agreement"]["agreement"] == 1.0 and same["agreement"]["kappa"] == 1.0
    assert same["shift"]["overall"]["mean_difference"] == 0.0
    # by hand, from the two runs' files
    a = {(r["prompt_id"], r["criterion_id"]): r["criteria_met"] for r in jsonl(
        runs.source / "per_criterion.jsonl")}  # fmt: skip
    b = {(r["prompt_id"], r["criterion_id"]): r["criteria_met"] for r in jsonl(
        runs.other / "per_criterion.jsonl")}  # fmt: skip
    pairs = [(a[k], b[k]) for k in a]
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    pa, pb = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    assert other["agreement"]["n"] == n == len(b)
    assert other["agreement"]["agreement"] == pytest.approx(observed)
    assert other["agreement"]["kappa"] == pytest.approx((observed - chance) / (1 - chance))
    assert 0 < observed < 1  # the two judges disagree on some criteria
    # the same by axis and by theme, by hand
    axis_of = {(r["prompt_id"], r["criterion_id"]): r["axis"] for r in jsonl(
        runs.source / "per_criterion.jsonl") if r["axis"]}  # fmt: skip
    theme_of = {r["prompt_id"]: r["theme"] for r in jsonl(runs.source / "examples.jsonl")}
    slices: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for k in a:
        slices[f"theme:{theme_of[k[0]]}"].append((a[k], b[k]))
        if k in axis_of:
            slices[f"axis:{axis_of[k]}"].append((a[k], b[k]))
    by = other["agreement"]["by"]
    assert set(by) == set(slices) and any(name.startswith("axis:") for name in by)
    for name, slice_pairs in slices.items():
        m = len(slice_pairs)
        equal = sum(x == y for x, y in slice_pairs) / m
        qa, qb = sum(x for x, _ in slice_pairs) / m, sum(y for _, y in slice_pairs) / m
        expected_chance = qa * qb + (1 - qa) * (1 - qb)
        assert (by[name]["n"], by[name]["agreement"]) == (m, pytest.approx(equal)), name
        if expected_chance < 1:
            kappa = (equal - expected_chance) / (1 - expected_chance)
            assert by[name]["kappa"] == pytest.approx(kappa), name
        else:
            assert by[name]["kappa"] is None, name
    sa = {r["prompt_id"]: r["score"] for r in jsonl(runs.source / "examples.jsonl")}
    sb = {r["prompt_id"]: r["score"] for r in jsonl(runs.other / "examples.jsonl")}
    ids = sorted(sa)
    shift = _clipped([sb[p] for p in ids]) - _clipped([sa[p] for p in ids])
    overall = other["shift"]["overall"]
    assert overall["mean_difference"] == pytest.approx(shift)
    summaries = [json.loads((d / "summary.json").read_text()) for d in (runs.source, runs.other)]
    scores = [s["metrics"]["overall_score"] for s in summaries]
    assert overall["mean_difference"] == pytest.approx(scores[1] - scores[0])
    x, y = np.array([sb[p] for p in ids]), np.array([sa[p] for p in ids])
    draw = np.random.RandomState(0).randint(0, len(ids), size=(1000, len(ids)))
    diffs = np.clip(x[draw].mean(axis=1), 0, 1) - np.clip(y[draw].mean(axis=1), 0, 1)
    low, high = np.percentile(diffs, [2.5, 97.5])
    assert (overall["ci_low"], overall["ci_high"]) == pytest.approx((low, high))
    themes = {r["prompt_id"]: r["theme"] for r in jsonl(runs.source / "examples.jsonl")}
    for theme, figures in other["shift"]["themes"].items():
        in_theme = [p for p in ids if themes[p] == theme]
        expected = _clipped([sb[p] for p in in_theme]) - _clipped([sa[p] for p in in_theme])
        assert figures["mean_difference"] == pytest.approx(expected), theme
    assert set(other["shift"]["themes"]) == set(themes.values())
    axes_a, axes_b = _axis_scores(runs.source), _axis_scores(runs.other)
    assert set(other["shift"]["axes"]) == set(axes_a) & set(axes_b)
    for axis, figures in other["shift"]["axes"].items():
        shared = sorted(axes_a[axis].keys() & axes_b[axis].keys())
        expected = _clipped([axes_b[axis][p] for p in shared]) - _clipped(
            [axes_a[axis][p] for p in shared]
        )
        assert figures["mean_difference"] == pytest.approx(expected), axis
        assert figures["n"] == len(shared)
    alone = run_module("healthbench_exp.aggregate", str(runs.other), "--out", str(out / "alone"))
    assert alone.returncode == 0, alone.stderr
    (entry,) = json.loads((out / "alone" / "sweep_summary.json").read_text())["regrades"]
    assert entry["compared"] is False and "not among the runs compared" in entry["reason"]
    text = (out / "sweep_summary.md").read_text()
    assert "## Regrades" in text and "judge judge-a -> judge-b" in text
    assert "Regrades: the judges" in (out / "report.html").read_text()


def test_refusals_are_one_line_before_any_request(runs: Runs, tmp_path: Path) -> None:
    unfinished = tmp_path / "unfinished"
    shutil.copytree(runs.source, unfinished)
    (unfinished / "status.json").write_text(json.dumps({"status": "failed"}))
    meta = tmp_path / "meta"
    shutil.copytree(runs.source, meta)
    summary = json.loads((meta / "summary.json").read_text())
    (meta / "summary.json").write_text(json.dumps({**summary, "task": "meta_eval"}))
    changed = tmp_path / "changed"  # a dataset.path run whose file changed since
    shutil.copytree(runs.source, changed)
    data = tmp_path / "data.jsonl"
    data.write_text((REPO / "healthbench_exp/data/sample.jsonl").read_text() + "\n")
    summary["config"]["dataset"]["path"] = str(data)
    summary["protocol"]["data_file"] = {"name": data.name, "sha256": "0" * 64}
    (changed / "summary.json").write_text(json.dumps(summary))
    runs.server.reset()
    cases = {
        "changed since the run read it": [f"regrade={changed}"],
        "no such directory": [f"regrade={tmp_path / 'missing'}"],
        "not a finished eval run (status: failed)": [f"regrade={unfinished}"],
        "a meta-eval run": [f"regrade={meta}"],
        "directory is read-only": [f"regrade={runs.source}", f"hydra.run.dir={runs.source}"],
        "model cannot be given": [f"regrade={runs.source}", "model=offline"],
    }
    for expected, arguments in cases.items():
        if not any(a.startswith("hydra.run.dir=") for a in arguments):
            arguments.append(f"hydra.run.dir={tmp_path / 'new'}")
        result = run_cli(*arguments)
        assert result.returncode == 2, (arguments, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], (arguments, result.stderr)
        assert not (tmp_path / "new").exists()
    assert runs.server.stats()["requests"] == 0
    assert file_hashes(runs.source) == runs.source_hashes[0]


def test_regrade_is_in_help_and_readme() -> None:
    assert "regrade=<run dir> judge=..." in run_cli("--help").stdout
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "| `regrade` |" in readme and "judges.md#regrade-and-compare" in readme

"""`python -m healthbench_exp.bridge_kit` end to end on the built-in endpoint: the dry run
first (both judges priced, at half price through the Batch API), then the kit's run, a bridge
source that a later run of the new judge names; three models of set strength, the bridge
checked across them (leave one model out); its refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from healthbench_exp.cli.bridge_kit import plan
from tests.e2e.bridge_runs import JUDGES, NEW, OLD, lines, run, write_data
from tests.e2e.test_e2e import run_module

OFFLINE_OLD = ("old_judge=offline", f"judge.name={OLD}")
KIT = ("new_judge=offline", *OFFLINE_OLD, *JUDGES)
ONE = "models=offline"  # one model (the default's three are real presets)


def kit(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    result = run_module(
        "healthbench_exp.bridge_kit",
        *KIT,
        *args,
        env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
        cwd=tmp_path,
    )
    return result.returncode, result.stdout, result.stderr


def test_the_dry_run_prices_both_judges_and_batch_halves_both(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 60)
    costs = {}
    for batch in ("false", "true"):
        out = tmp_path / f"kit_{batch}"
        code, stdout, err = kit(
            tmp_path, ONE, f"dataset.path={data}", "examples=30", f"out={out}", "dry_run=true",
            f"batch={batch}",
        )  # fmt: skip
        assert code == 0, err[-2000:]
        estimate = json.loads((out / "dry_run_offline" / "estimate.json").read_text())
        assert estimate["rows"] == 30 and not (out / "source_offline").exists()
        total = estimate["total_cost_usd"]
        assert f"bridge kit dry run: dry_run_offline: ${total:,.2f}; in all ${total:,.2f}" in stdout
        costs[batch] = (estimate["judge"]["cost_usd"], estimate["jury"][NEW]["cost_usd"])
        assert estimate["judge"]["calls"] == estimate["jury"][NEW]["calls"] > 0
    for plain, batched in zip(costs["false"], costs["true"], strict=True):
        assert batched == pytest.approx(plain / 2, rel=1e-6)


@pytest.mark.parametrize(
    ("switch", "dry"),
    [
        ("dry_run=true", True),
        ("dry_run=True", True),
        ("dry_run=1", True),
        ("+dry_run=yes", True),
        ("dry_run.enabled=true", True),
        ("dry_run.pilot=2", True),
        ("dry_run=false", False),
        ("dry_run=0", False),
        ("dry_run.pilot=0", False),
    ],
)
def test_the_kit_reads_a_dry_run_as_the_main_command_composes_it(
    tmp_path: Path, switch: str, dry: bool
) -> None:
    data = write_data(tmp_path, "pool", 20)
    kit_plan = plan([*KIT, ONE, f"dataset.path={data}", "examples=10", f"out={tmp_path / 'k'}",
                     switch])  # fmt: skip
    assert kit_plan.dry is dry and kit_plan.pilot == (2 if switch == "dry_run.pilot=2" else 0)
    assert [d.name for _, _, d in kit_plan.runs] == ["dry_run_offline" if dry else "source_offline"]


def test_a_pilot_runs_each_models_first_rows_and_stops_with_the_estimates(tmp_path: Path) -> None:
    """`dry_run.pilot=3`: each model's run sends its first 3 rows (paid) and estimates the rest;
    the kit prints what the pilots paid and the estimates' total, and makes no bridge source."""
    data = write_data(tmp_path, "pool", 40)
    out = tmp_path / "kit"
    code, stdout, err = kit(
        tmp_path, "models=offline,offline@weak", f"dataset.path={data}", "examples=20",
        f"out={out}", "dry_run.pilot=3",
    )  # fmt: skip
    assert code == 0 and "Traceback" not in err, err[-2000:]
    assert sorted(p.name for p in out.iterdir()) == [
        "bridge_sample.jsonl", "dry_run_offline", "dry_run_weak"
    ]  # fmt: skip
    estimates = [json.loads((out / d / "estimate.json").read_text())
                 for d in ("dry_run_offline", "dry_run_weak")]  # fmt: skip
    assert [e["pilot"]["rows"] for e in estimates] == [3, 3]
    calls = sum(e["pilot"]["requests"] for e in estimates)
    paid = sum(e["pilot"]["cost_usd"] for e in estimates)
    total = sum(e["total_cost_usd"] for e in estimates)
    assert calls > 0 and "bridge sources:" not in stdout
    assert f"; in all ${total:,.2f}\n" in stdout
    assert (
        f"the pilot (dry_run.pilot=3) sent each model's first 3 rows for real: {calls} paid "
        f"calls, ${paid:,.2f}; the kit's run on the same sample" in stdout
    )


def test_the_kit_writes_a_bridge_source_a_later_run_names(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 80)
    other = write_data(tmp_path, "later", 20)
    out = tmp_path / "kit"
    code, stdout, err = kit(tmp_path, ONE, f"dataset.path={data}", "examples=40", f"out={out}")
    assert code == 0, err[-2000:]
    source = out / "source_offline"
    assert f"bridge.runs=[{source}]" in stdout
    assert not (out / "bridge_check.json").exists()  # one source: nothing to leave out
    sample = lines(out / "bridge_sample.jsonl")
    pool = {r["prompt_id"]: r for r in lines(data)}
    assert len(sample) == 40 and all(
        pool[r["prompt_id"]]["rubrics"] == r["rubrics"] for r in sample
    )
    every = {t for r in pool.values() for c in r["rubrics"] for t in c["tags"] if "level" not in t}
    assert {t for r in sample for c in r["rubrics"] for t in c["tags"] if "level" not in t} == every
    graded = lines(source / "per_criterion.jsonl")
    assert len(graded) == sum(len(r["rubrics"]) for r in sample)
    assert all(set(r["verdicts"]) == {OLD, NEW} for r in graded)
    later = run(
        tmp_path / "later_run",
        tmp_path / "cache",
        f"dataset.path={other}",
        f"bridge.runs=[{source}]",
    )
    bridged = json.loads((later / "summary.json").read_text())["bridged"]
    assert bridged["pairs"] == len(graded) and bridged["bridge"] == [str(source)]


def test_help_prints_the_usage_and_exits_0(tmp_path: Path) -> None:
    for flag in ("--help", "-h"):
        result = run_module("healthbench_exp.bridge_kit", flag, "new_judge=gpt54", cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout.startswith(
            "usage: `python -m healthbench_exp.bridge_kit new_judge=<preset> [key=value ...]`"
        )
        for key in ("new_judge", "models", "examples", "seed", "batch", "old_judge", "out"):
            assert f"- `{key}`" in result.stdout or f"`{key}` (" in result.stdout, key
    assert not any(tmp_path.iterdir())  # nothing written, nothing run


def test_the_kits_refusals_are_one_line_and_exit_2(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 20)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    cases = {  # the bundled sample (experiment=demo) needs more than 3 rows to cover its strata
        "is not empty; give the kit a new folder": (
            f"dataset.path={data}",
            f"out={tmp_path / 'full'}",
        ),
        "examples=3: covering every consensus cluster and axis takes": ("examples=3",),
        "bridge_kit sets jury itself": ("jury=[gpt54]",),
        f"old_judge=offline is offline-judge; a bridge starts from the reference grader {OLD}": (
            "judge.name=offline-judge",
        ),
    }
    cases["models=offline,offline: give distinct model presets"] = ("models=offline,offline",)
    kit_keys = "its own keys are new_judge, models, examples, seed, batch, old_judge, out"
    cases |= {  # arguments that ended in a traceback, or were taken silently
        f"bridge_kit takes key=value arguments, got 'foo'; {kit_keys}": ("foo",),
        f"got '-m'; {kit_keys}": ("-m",),
        "unknown key 'exampels'. Did you mean 'examples'? The bridge kit: ": ("exampels=3",),
        "unknown config option 'sampling.temprature'. Did you mean 'temperature'?": (
            "sampling.temprature=0",
        ),
        "sampling.temperature=abc: sampling.temperature takes a number": (
            "sampling.temperature=abc",
        ),
        "model=nosuch: model has no option 'nosuch'. Valid choices for model: ": (
            "models=offline,nosuch",
        ),
        "give models=<a,b,c> or model=<preset> (one model), not both": ("model=offline",),
        "batch takes true or false, not 'maybe'": ("batch=maybe",),
        "batch=true writes its own hydra.searchpath; give presets by name": (
            f"hydra.searchpath=[file://{tmp_path}]",
            "batch=true",
        ),
        "bridge_kit needs new_judge=<judge preset>": ("new_judge=",),  # an IndexError
        "old_judge=nosuch: judge has no option 'nosuch'. Valid choices for judge: ": (
            "old_judge=nosuch",
        ),
        "new_judge=nosuch: judge has no option 'nosuch'. Valid choices for judge: ": (
            "new_judge=nosuch",
        ),
        "dry_run.pilot must be >= 0, got -1": (f"dataset.path={data}", "dry_run.pilot=-1"),
        "bridge_kit does not take resume=; resume a model's run with python -m ": ("resume=x",),
        f"out={tmp_path / 'full' / 'x'} is a file; give the kit a new folder": (
            f"out={tmp_path / 'full' / 'x'}",
        ),
        f"out={tmp_path / 'full' / 'x' / 'k'}: cannot write the kit's folder ([Errno 20] ": (
            f"dataset.path={data}",
            f"out={tmp_path / 'full' / 'x' / 'k'}",
        ),
    }
    for message, args in cases.items():
        code, _, err = kit(tmp_path, ONE, f"out={tmp_path / 'k'}", *args)
        assert code == 2 and err.strip().count("\n") == 0 and message in err, (message, err)
    assert (tmp_path / "full" / "x").read_text() == "mine" and not (tmp_path / "k").exists()


def test_three_models_of_set_strength_make_a_bridge_checked_across_them(tmp_path: Path) -> None:
    """A strong, a middling and a weak model (`offline_server.model_strengths`) answer one
    sample; the kit leaves each out: label_shift's bridge from the other two holds the reference
    grader's own score on it, calibration's misses the strong and the weak one."""
    data = write_data(tmp_path, "pool", 150)
    out = tmp_path / "kit"
    strengths = "strong=0.8:0.95,middling=0.45:0.8,weak=0.15:0.6"
    code, stdout, err = kit(
        tmp_path, "models=offline@strong,offline@middling,offline@weak",
        f"offline_server.model_strengths='{strengths}'", f"dataset.path={data}",
        "examples=150", f"out={out}",
    )  # fmt: skip
    assert code == 0, err[-2000:]
    dirs = [out / f"source_{m}" for m in ("strong", "middling", "weak")]
    assert f"bridge.runs=[{','.join(str(d) for d in dirs)}]" in stdout
    check = json.loads((out / "bridge_check.json").read_text())
    assert check["bridge"] == [str(d) for d in dirs]
    assert check["models"] == ["strong", "middling", "weak"]
    moved = {(t["model"], t["method"]): t for t in check["transport"]}
    assert len(moved) == 6
    for model in ("strong", "weak"):
        shift, q = moved[(model, "label_shift")], moved[(model, "calibration")]
        low, high = shift["ci"]
        assert low <= shift["own"] <= high, shift
        assert abs(shift["error"]) < abs(q["error"])
        assert not q["ci"][0] <= q["own"] <= q["ci"][1], q
        print(
            f"{model}: own {shift['own']:.4f}, label_shift {shift['bridged']:.4f} "
            f"[{low:.4f}, {high:.4f}], calibration {q['bridged']:.4f}"
        )
    # the judge's error rates are the same on every model: se and sp do not differ beyond
    # the interval; calibration's q does (it moves with the model)
    assert not any(c["beyond_interval"] for c in check["spread"]["label_shift"])
    assert any(c["beyond_interval"] for c in check["spread"]["calibration"])
    assert "leave one model out (3 sources" in stdout and "OUTSIDE the interval" in stdout


@pytest.mark.parametrize(("stop", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stopped_kit_lets_the_run_end_cleanly_and_names_the_runs_left(
    tmp_path: Path, stop: signal.Signals, exit_code: int
) -> None:
    """A signal to the kit (no terminal: it passes it on) stops the model's run as the main
    command stops (status `interrupted`, resumable), not killed; the kit names the command that
    finishes it and the model's run not started, and exits with the run's code."""
    data = write_data(tmp_path, "pool", 40)
    out = tmp_path / "kit"
    kit_process = subprocess.Popen(
        [sys.executable, "-m", "healthbench_exp.bridge_kit", *KIT, "models=offline,offline@weak",
         f"dataset.path={data}", "examples=20", f"out={out}", "offline_server.latency_ms=1500",
         "runner.max_concurrent=2"],
        cwd=tmp_path, env={**os.environ, "HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    assert kit_process.stdout is not None
    seen = []
    for line in kit_process.stdout:  # the first model's run is sending its calls (its log)
        seen.append(line)
        if "built-in offline endpoint at" in line:
            break
    kit_process.send_signal(stop)  # to the kit alone
    rest, _ = kit_process.communicate(timeout=120)
    err = "".join(seen) + rest  # stdout and stderr
    assert kit_process.returncode == exit_code, err[-3000:]
    # (the run's own stop may print a finalizer's ignored exception: the main command's matter)
    source = out / "source_offline"
    assert json.loads((source / "status.json").read_text())["status"] == "interrupted"
    assert (
        f"bridge kit stopped: offline's run ended after {stop.name} with exit code {exit_code} "
        f"(interrupted)\n  finish it: python -m healthbench_exp resume={source}\n"
        "  not started, weak: python -m healthbench_exp " in err
    )
    assert not (out / "source_weak").exists() and "bridge sources:" not in err
    assert "KeyboardInterrupt" not in err and "in main\n" not in err  # the kit's own stop


def test_a_run_that_stops_on_its_budget_stops_the_kit_with_the_runs_left(tmp_path: Path) -> None:
    data = write_data(tmp_path, "pool", 40)
    out = tmp_path / "kit"
    code, stdout, err = kit(
        tmp_path, "models=offline,offline@weak", f"dataset.path={data}", "examples=20",
        f"out={out}", "budget.max_usd=0.05",
    )  # fmt: skip
    assert code == 4, err[-2000:]  # the run's own code: its budget reached
    assert (
        f"bridge kit stopped: offline's run ended with exit code 4 (partial)\n  finish it: "
        f"python -m healthbench_exp resume={out / 'source_offline'}\n  not started, weak: " in err
    )
    assert not (out / "source_weak").exists() and "bridge sources:" not in stdout

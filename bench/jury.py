"""What a jury costs: one judge against a three-judge jury (SPEC 7.1), wall time and cost.

    python bench/jury.py --n 2000                         # the issue's figure (an idle machine)
    python bench/jury.py --n 200 --latency-ms 500 --jitter-ms 250 --concurrency 256

Generates N synthetic rows in the HealthBench schema (bench/common.py's `write_rows`), starts
the built-in server with latency L +- J ms (throughput.py's server start) and runs
`python -m healthbench_exp` against it twice on fresh response caches: graded by one judge, then
by a jury of three (the judge and two members, each a judge preset of its own in a temporary
config directory, on the same server, each with up to C requests in flight; the run's in-flight
cap `runner.max_in_flight` is C x the judges + C for the model). Every endpoint is priced at
illustrative list prices (model: gpt-4.1-mini's, each judge: gpt-4.1's, 2025-06), so the costs
show the ratio, not a bill. One line of figures per run:

- requests: the model's and every judge's paid calls (from summary.json);
- wall s: the harness process, start to exit; evaluation s: first request to last reply;
- cost $: summary.json's total; ratio: against the one-judge run.

It prints figures; it asserts nothing. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import add_options, write_rows

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args

MODEL_PRICE = "{input_per_mtok: 0.4, cached_input_per_mtok: 0.1, output_per_mtok: 1.6}"
JUDGE_PRICE = "{input_per_mtok: 2.0, cached_input_per_mtok: 0.5, output_per_mtok: 8.0}"
JUDGES = ("bench_judge_a", "bench_judge_b", "bench_judge_c")  # presets; the first is primary


def write_presets(conf: Path, base_url: str, concurrency: int) -> None:
    """A model preset and three judge presets (distinct names: the built-in's verdicts hash
    the name, so the judges disagree), all on `base_url`, at illustrative prices."""
    (conf / "model").mkdir(parents=True, exist_ok=True)
    (conf / "judge").mkdir(parents=True, exist_ok=True)
    (conf / "model" / "bench_model.yaml").write_text(
        f"defaults:\n  - openai_compatible\nname: bench-model\nbase_url: {base_url}\n"
        f"max_concurrency: {concurrency}\nprice: {MODEL_PRICE}\n"
    )
    for preset in JUDGES:
        (conf / "judge" / f"{preset}.yaml").write_text(
            f"defaults:\n  - openai_compatible\nname: {preset.replace('_', '-')}\n"
            f"base_url: {base_url}\nmax_concurrency: {concurrency}\nprice: {JUDGE_PRICE}\n"
        )


def run(data: Path, work: Path, args: argparse.Namespace, jury: bool) -> dict[str, float]:
    label = "jury" if jury else "one"
    run_dir, cache = work / f"run-{label}", work / f"cache-{label}"
    judges = len(JUDGES) if jury else 1
    command = [
        sys.executable, "-m", "healthbench_exp", f"dataset.path={data}", "wandb=disabled",
        f"hydra.searchpath=[file://{work / 'conf'}]", "model=bench_model", f"judge={JUDGES[0]}",
        f"runner.max_in_flight={args.concurrency * (judges + 1)}", "runner.progress=false",
        f"runner.max_concurrent={args.examples_in_flight}", f"cache.dir={cache}",
        f"hydra.run.dir={run_dir}",
        *([f"jury=[{','.join(JUDGES[1:])}]"] if jury else []),
    ]  # fmt: skip
    started = time.time()
    log = work / f"{label}.stderr.txt"
    with log.open("w") as stderr:
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=stderr, env=os.environ)
    wall = time.time() - started
    if done.returncode != 0:
        raise SystemExit(f"{label} failed ({done.returncode}):\n{log.read_text()[-2000:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    usage, counts = summary["usage"], summary["counts"]
    members = usage.get("jury") or {}
    return {
        "judges": judges,
        "requests": counts["model_requests"]
        + counts["judge_requests"]
        + sum(m["requests"] for m in members.values()),
        "wall_s": wall,
        "evaluation_s": counts.get("evaluation_s") or wall,
        "cost_usd": usage["total_cost_usd"],
        "overall_score": summary["metrics"]["overall_score"],
        "jury_score": (summary.get("jury") or {}).get("metrics", {}).get("overall_score"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_options(parser, "requests in flight per role")
    parser.add_argument("--examples-in-flight", type=int, default=512, help="runner.max_concurrent")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hb-bench-jury-"))
    data = write_rows(work, args.n, args.seed)
    print(
        f"N={args.n} L={args.latency_ms:g}+-{args.jitter_ms:g} ms C={args.concurrency} per role; "
        f"illustrative prices (work dir {work})"
    )
    header = ["judges", "requests", "wall_s", "evaluation_s", "cost_usd"]
    print("run   " + "  ".join(f"{h:>12}" for h in header) + "    wall x    cost x")
    settings = server_args(latency_ms=args.latency_ms, jitter_ms=args.jitter_ms)
    with ServerProcess(settings) as server:
        write_presets(work / "conf", server.base_url, args.concurrency)
        one = run(data, work, args, jury=False)
        jury = run(data, work, args, jury=True)
    for label, result in (("one", one), ("jury", jury)):
        wall, cost = result["wall_s"] / one["wall_s"], result["cost_usd"] / one["cost_usd"]
        figures = "  ".join(f"{result[h]:>12.3f}" for h in header)
        print(f"{label:<5} {figures}  {wall:>8.2f}  {cost:>8.2f}")
    print(
        f"overall_score: the judge {one['overall_score']:.4f} (the same in the jury run: "
        f"{jury['overall_score']:.4f}), the jury's {jury['jury_score']:.4f}"
    )


if __name__ == "__main__":
    main()

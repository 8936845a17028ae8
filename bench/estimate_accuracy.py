"""How close the dry run's estimate comes to the measured cost, on the built-in endpoint.

Three estimates of one job (the bundled 24 examples, demo prices) whose replies and verdicts
have lengths no option expects (`--reply-tokens`, `--verdict-tokens`), each against the cost the
real run then measures (summary.json `usage.total_cost_usd`), in a fresh cache each:

- blind: nothing measured yet (the assumed `expected_completion_tokens`);
- history: after a run of 16 other-seeded examples x 2 rollouts (32 replies of the model);
- pilot: `dry_run.pilot=N` (the run pays the rest; its estimate is of the rest).

    python bench/estimate_accuracy.py --reply-tokens 300 --verdict-tokens 150 --pilot 6

`--coverage K` measures instead how often the pilot's 95% interval holds the cost the run then
measures, over K independent pilots: trial k draws its 20 of the 24 examples and its replies'
lengths with seed k (`sampling.seed`, `offline_server.seed`), pilots the first `--pilot` rows,
then runs the job in the same cache (the run pays the rest, the estimate's subject):

    python bench/estimate_accuracy.py --coverage 40 --pilot 6
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from healthbench_exp import dry_run, load_config, run


def job(cache: Path, lengths: list[str], *overrides: str) -> Any:
    return load_config(
        ["experiment=demo", "wandb.mode=disabled", f"cache.dir={cache}", *lengths, *overrides]
    )[0]


def line(name: str, estimate: dict[str, Any], measured: float) -> str:
    interval = estimate.get("interval")
    shown = f" [{interval['low']:.4f}, {interval['high']:.4f}]" if interval else ""
    error = estimate["total_cost_usd"] / measured - 1
    return (
        f"{name:<8} estimate ${estimate['total_cost_usd']:.4f}{shown}  measured ${measured:.4f}"
        f"  {error:+.1%}"
    )


def coverage(trials: int, pilot_rows: int, lengths: list[str]) -> None:
    """The share of `trials` pilots whose interval holds the measured cost (see the docstring),
    with the intervals' mean half-width and the misses."""
    held, widths = 0, []
    for k in range(trials):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            seeds = [f"sampling.seed={k}", f"offline_server.seed={k}", "sampling.num_examples=20"]
            estimate = dry_run(
                job(root / "c", lengths, *seeds, f"dry_run.pilot={pilot_rows}"), root / "pilot"
            )
            measured = run(job(root / "c", lengths, *seeds), root / "run")["usage"]
            cost = measured["total_cost_usd"]
            interval = estimate["interval"]
            inside = interval["low"] <= cost <= interval["high"]
            held += inside
            widths.append((interval["high"] - interval["low"]) / 2 / estimate["total_cost_usd"])
            if not inside:
                print(f"  miss: trial {k}: {line('pilot', estimate, cost)}", flush=True)
    print(
        f"coverage: {held}/{trials} = {held / trials:.0%} of {pilot_rows}-row pilots' 95% "
        f"intervals held the measured cost (mean half-width {sum(widths) / len(widths):.1%} "
        "of the estimate)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reply-tokens", type=int, default=300)
    parser.add_argument("--verdict-tokens", type=int, default=150)
    parser.add_argument("--pilot", type=int, default=6)
    parser.add_argument("--coverage", type=int, default=0, metavar="K")
    args = parser.parse_args()
    lengths = [
        f"offline_server.reply_tokens={args.reply_tokens}",
        f"offline_server.verdict_tokens={args.verdict_tokens}",
    ]
    if args.coverage:
        coverage(args.coverage, args.pilot, lengths)
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        blind = dry_run(job(root / "c1", lengths), root / "blind")
        measured = run(job(root / "c1", lengths), root / "blind-run")["usage"]["total_cost_usd"]
        print(line("blind", blind, measured))
        first = job(root / "c2", lengths, "sampling.num_examples=16", "sampling.seed=1")
        first.sampling.rollouts_per_example = 2
        run(first, root / "history-run")
        history = dry_run(job(root / "c2", lengths), root / "history")
        measured = run(job(root / "c2", lengths), root / "run2")["usage"]["total_cost_usd"]
        print(line("history", history, measured))
        pilot = dry_run(job(root / "c3", lengths, f"dry_run.pilot={args.pilot}"), root / "pilot")
        measured = run(job(root / "c3", lengths), root / "run3")["usage"]["total_cost_usd"]
        print(line("pilot", pilot, measured))


if __name__ == "__main__":
    main()

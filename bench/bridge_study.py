"""The bridge's simulation study (SPEC 7.5; `bench/bridge_simulation.py`): bias, RMSE,
mean interval width, coverage of the reference grader's own score and of the model's expected
score, per world and method, as the markdown table of docs/bridge.md; a coverage of 0.99 or more
is marked "wider than needed". Where a judge's errors are correlated within a reply, the row
"label_shift, pairs one by one" gives the same estimate with the bridge's pairs resampled one
by one (before revision 2) beside `label_shift`'s by example.

    python bench/bridge_study.py --replicates 300  # the docs' first table
    python bench/bridge_study.py                   # 1000 replicates (about 28 min)
    python bench/bridge_study.py --rare-verdict --replicates 500 --resamples 60 \
        --run-examples 300                         # the second: revision 2 beside 3

Without `--rare-verdict`: every world but the rare-verdict ones (`MAIN`), each method, as the
first table of docs/bridge.md. `--rare-verdict`: only the worlds where one of the reference
grader's verdicts is rare in a stratum (`RARE_VERDICT`), `label_shift` (revision 3) beside
revision 2's pooling, as the second table of docs/bridge.md.

Seeded: the same options print the same table (each world seeded by its name: its rows are
the same whichever worlds run beside it). The bootstrap uses `--resamples` resamples per
replicate (200 by default; a run's own interval uses runner.bootstrap_samples, 1000): fewer
resamples make each interval's ends noisier, not its coverage lower on average.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

# one BLAS thread: the study's matrices are small, and threads only contend
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

# beside this script (as bench/common.py is)
from bridge_simulation import RARE_VERDICT, REVISION_2, SCENARIOS, Result, study

# the main table's worlds: the rare-verdict ones have a table of their own (`--rare-verdict`)
MAIN = tuple(w for w in SCENARIOS if w not in RARE_VERDICT)
WIDER_THAN_NEEDED = 0.99  # coverage at or above it: the table says "wider than needed"


def coverage_cell(coverage: float) -> str:
    """A coverage as the table writes it, "wider than needed" beside it at or above
    WIDER_THAN_NEEDED (SPEC 7.5 asks the study to say so)."""
    return f"{coverage:.3f}" + " (wider than needed)" * (coverage >= WIDER_THAN_NEEDED)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--run-examples",
        type=int,
        default=0,
        help="cap each world's run at this many examples (0: as the world sets it)",
    )
    parser.add_argument(
        "--rare-verdict",
        action="store_true",
        help="only the rare-verdict worlds, label_shift beside its revision 2",
    )
    args = parser.parse_args()
    started = time.monotonic()
    cap = args.run_examples
    worlds = [replace(w, run_examples=min(w.run_examples, cap or w.run_examples)) for w in (
        RARE_VERDICT if args.rare_verdict else MAIN
    )]  # fmt: skip
    if args.rare_verdict:
        # a world at a time (each seeded by its name: the same rows as all at once), each row
        # printed as it is done
        print(revisions_table([]))
        for world in worlds:
            found = study(
                [world], args.replicates, args.resamples, args.seed, ("label_shift", REVISION_2)
            )
            print(revisions_table(found).splitlines()[-1], flush=True)
    else:
        # a world at a time too, its rows printed as they are done
        print(TABLE_HEADER)
        for world in worlds:
            print_rows(study([world], args.replicates, args.resamples, args.seed))
    print(
        f"\n{args.replicates} replicates, {args.resamples} resamples each, seed {args.seed}"
        + f", runs of at most {cap} examples" * bool(cap)
        + f"; {time.monotonic() - started:.0f} s"
    )


def revisions_table(results: list[Result]) -> str:
    """Per world: revision 2's bias and coverage of O's own score beside revision 3's (and
    revision 3's interval width), one markdown row each."""
    by_world: dict[str, dict[str, Result]] = {}
    for r in results:
        by_world.setdefault(r.world, {})[r.method] = r
    lines = [
        "| world | O's own score | revision 2: bias | coverage | revision 3: bias | coverage | "
        "interval width |",
        "|---|---|---|---|---|---|---|",
    ]
    for world, methods in by_world.items():
        old, new = methods[REVISION_2], methods["label_shift"]
        lines.append(
            f"| {world.removeprefix('rare: ')} | {new.truth:.3f} | {old.bias:+.4f} | "
            f"{coverage_cell(old.coverage)} | {new.bias:+.4f} | {coverage_cell(new.coverage)} | "
            f"{new.width:.4f} |"
        )
    return "\n".join(lines)


TABLE_HEADER = (
    "| world | method | O's own score | bias | RMSE | interval width | coverage | "
    "coverage of the expected score |\n|---|---|---|---|---|---|---|---|"
)


def print_rows(results: list[Result]) -> None:
    """Each world and method of `results`, one markdown row each (under TABLE_HEADER)."""
    for r in results:
        print(
            f"| {r.world} | {r.method} | {r.truth:.3f} | {r.bias:+.4f} | {r.rmse:.4f} | "
            f"{r.width:.4f} | {coverage_cell(r.coverage)} | {r.coverage_expected:.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()

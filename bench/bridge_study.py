"""The bridge's simulation study (SPEC 7.5; `bench/bridge_simulation.py`): bias, RMSE,
mean interval width, coverage of the reference grader's own score and of the model's expected
score, per world and method, as the markdown table of docs/bridge.md.

    python bench/bridge_study.py --replicates 500  # the docs' table (about 9 min of one core)
    python bench/bridge_study.py                   # 1000 replicates (about 17 min)
    python bench/bridge_study.py --replicates 200  # quicker, noisier

Seeded: the same options print the same table (each world seeded by its name: its rows are
the same whichever worlds run beside it). The bootstrap uses `--resamples` resamples per
replicate (200 by default; a run's own interval uses runner.bootstrap_samples, 1000): fewer
resamples make each interval's ends noisier, not its coverage lower on average.
"""

from __future__ import annotations

import argparse
import os
import time

# one BLAS thread: the study's matrices are small, and threads only contend
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from bridge_simulation import SCENARIOS, study  # beside this script (as bench/common.py is)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.monotonic()
    results = study(SCENARIOS, args.replicates, args.resamples, args.seed)
    print(
        "| world | method | O's own score | bias | RMSE | interval width | coverage | "
        "coverage of the expected score |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r.world} | {r.method} | {r.truth:.3f} | {r.bias:+.4f} | {r.rmse:.4f} | "
            f"{r.width:.4f} | {r.coverage:.3f} | {r.coverage_expected:.3f} |"
        )
    print(
        f"\n{args.replicates} replicates, {args.resamples} resamples each, seed {args.seed}; "
        f"{time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    main()

"""The mutation score of the last `mutmut run`, per module, from the results it left in mutants/.

Usage: python .ci/mutation_score.py [--only PREFIX] [--min-killed 0.95] [--max-unreached 0.02]

Reads each mutated file's `mutants/<path>.meta` (mutmut 3's record of every mutant's exit
code), prints killed / reached / total per module and in all (reached: a test ran it; a
mutant no test reaches is "unreached"), and exits 1 when the killed share of the reached
mutants is below --min-killed or the unreached share of all is above --max-unreached. Only
modules whose dotted name starts with PREFIX count (e.g. healthbench_exp.grading).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KILLED = {1, 3}  # a failing test (3: pytest's internal error, which mutmut counts as a kill)
UNREACHED = {5, 33}  # no test ran it
TIMEOUT = {24, -24, 36, 152, 255}  # killed by running too long


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--min-killed", type=float, default=0.95)
    parser.add_argument("--max-unreached", type=float, default=0.02)
    args = parser.parse_args()
    rows = []
    for meta in sorted(Path("mutants").rglob("*.py.meta")):
        module = ".".join(meta.relative_to("mutants").with_suffix("").with_suffix("").parts)
        if not module.startswith(args.only):
            continue
        codes = list(json.loads(meta.read_text())["exit_code_by_key"].values())
        if not codes:
            continue
        killed = sum(c in KILLED or c in TIMEOUT for c in codes)
        unreached = sum(c in UNREACHED for c in codes)
        unchecked = sum(c is None for c in codes)
        rows.append((module, killed, len(codes) - unreached - unchecked, len(codes), unchecked))
    if not rows:
        sys.exit(f"no mutmut results under mutants/ for {args.only or 'any module'}: run mutmut")
    killed, reached, total, unchecked = (sum(r[i] for r in rows) for i in (1, 2, 3, 4))
    print(f"{'module':48} {'killed':>7} {'reached':>8} {'total':>6}  score")
    for module, k, r, t, _ in [*rows, ("all", killed, reached, total, unchecked)]:
        print(f"{module:48} {k:7d} {r:8d} {t:6d}  " + (f"{k / r:.1%}" if r else "-"))
    failures = []
    if unchecked:
        failures.append(f"{unchecked} mutants not checked (an interrupted run?)")
    if reached and killed / reached < args.min_killed:
        failures.append(f"killed {killed / reached:.1%} of reached < {args.min_killed:.0%}")
    if (total - reached - unchecked) / total > args.max_unreached:
        share = (total - reached - unchecked) / total
        failures.append(f"unreached {share:.1%} of all > {args.max_unreached:.0%}")
    if failures:
        sys.exit("mutation score below the threshold: " + "; ".join(failures))


if __name__ == "__main__":
    main()

"""What the benches that run the harness on synthetic rows share (bench/jury.py,
bench/wandb_overhead.py): their common options and the rows file.

    python bench/common.py --n 2000 --out rows.jsonl      # the rows alone, to run by hand

- `add_options(parser, concurrency_help)`: `--n`, `--latency-ms`, `--jitter-ms`,
  `--concurrency`, `--seed`, with the benches' defaults (2000 rows, 500 +- 250 ms, 256 in
  flight, seed 0);
- `write_rows(work, n, seed)`: N synthetic rows in the HealthBench schema (bench/throughput.py's
  `synthetic_rows`, the generator every bench uses) written to `<work>/rows.jsonl`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput import synthetic_rows

ROWS = "rows.jsonl"


def add_options(parser: argparse.ArgumentParser, concurrency_help: str) -> None:
    """The options of a bench that runs the harness on N synthetic rows against one built-in
    server with latency L +- J ms."""
    parser.add_argument("--n", type=int, default=2000, help="synthetic examples")
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--jitter-ms", type=float, default=250.0)
    parser.add_argument("--concurrency", type=int, default=256, help=concurrency_help)
    parser.add_argument("--seed", type=int, default=0)


def rows_text(n: int, seed: int) -> str:
    """N synthetic rows drawn with `seed`, as JSONL."""
    return "".join(json.dumps(r) + "\n" for r in synthetic_rows(n, seed))


def write_rows(work: Path, n: int, seed: int) -> Path:
    """`<work>/rows.jsonl`: N synthetic rows drawn with `seed`; its path."""
    data = work / ROWS
    data.write_text(rows_text(n, seed))
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description="Write N synthetic rows (the benches' data).")
    parser.add_argument("--n", type=int, default=2000, help="synthetic examples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(ROWS), help="the JSONL file to write")
    args = parser.parse_args()
    args.out.write_text(rows_text(args.n, args.seed))
    print(f"{args.n} rows in {args.out}")


if __name__ == "__main__":
    main()

"""W&B overhead: the wall time an offline W&B run adds to an evaluation.

    python bench/wandb_overhead.py --n 2000 --repeat 3
    python bench/wandb_overhead.py --n 2000 --zero-latency --concurrency 64

Generates the synthetic rows of bench/throughput.py, starts one built-in server (latency
L +- J ms), and runs the harness on them with `wandb.mode=disabled` and `wandb.mode=offline`
alternately (each run with a fresh response cache and W&B files under its own run folder), then
prints each run's wall time (the process, launch to exit), evaluation time and CPU time (user +
sys of the harness process and the children it waited for), the medians, and the overhead:
median offline / median disabled - 1, of wall time and of CPU time. The offline run
holds everything an online one does (progress, summary, tables, the results artifact); it is
what the run's own process pays, whether the data is uploaded later or live. It prints figures;
it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import add_options, write_rows
from throughput import run_once

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args

MODES = ("disabled", "offline")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_options(parser, "requests in flight at most")
    parser.add_argument("--zero-latency", action="store_true", help="L = J = 0")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each mode")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hb-wandb-bench-"))
    data = write_rows(work, args.n, args.seed)
    latency = 0.0 if args.zero_latency else args.latency_ms
    jitter = 0.0 if args.zero_latency else args.jitter_ms
    print(f"N={args.n} L={latency:g}+-{jitter:g} ms C={args.concurrency}  (work dir {work})")
    print(
        f"{'run':<4} {'wandb':>9} {'wall_s':>9} {'evaluation_s':>13} {'cpu_s':>8} {'requests':>9}"
    )
    walls: dict[str, list[float]] = {mode: [] for mode in MODES}
    cpus: dict[str, list[float]] = {mode: [] for mode in MODES}
    with ServerProcess(server_args(latency_ms=latency, jitter_ms=jitter)) as server:
        for i in range(args.repeat):
            for mode in MODES:
                options = argparse.Namespace(
                    zero_latency=args.zero_latency, latency_ms=latency, jitter_ms=jitter,
                    concurrency=args.concurrency, examples_in_flight=512, reuse_cache=False,
                    runner="harness", http_client="aiohttp", requests_only=False,
                    set=[f"wandb.mode={mode}"],
                )  # fmt: skip
                result = run_once(data, options, work, server)
                cpu = result["cpu_ms_per_request"] * result["requests"] / 1000
                walls[mode].append(result["wall_s"])
                cpus[mode].append(cpu)
                print(
                    f"{i + 1:<4} {mode:>9} {result['wall_s']:>9.2f} "
                    f"{result['evaluation_s']:>13.2f} {cpu:>8.2f} {result['requests']:>9}",
                    flush=True,
                )
    for label, figures in (("wall", walls), ("CPU", cpus)):
        disabled, offline = (statistics.median(figures[mode]) for mode in MODES)
        print(
            f"median {label} s: disabled {disabled:.2f}, offline {offline:.2f}; "
            f"W&B adds {offline - disabled:.2f} s ({offline / disabled - 1:+.1%})"
        )


if __name__ == "__main__":
    main()

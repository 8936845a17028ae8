"""What a sweep's budget ledger costs each request, on the thread of the run's event loop.

    python bench/sweep_ledger.py                          # local disk, and 1 ms a file call
    python bench/sweep_ledger.py --latency-ms 0 2 5 --requests 400

A job of a sweep under `budget.max_usd` keeps the sweep's ledger (`model.sweep_budget`): a
request's `Budget.reserve` before it is sent and its `Budget.settle` when it has finished, both
called on the event loop's thread. This times those two calls for `--requests` requests of a
job (each estimated at $0.001, costing $0.0008: $0.24 in all) in a sweep capped at `--max-usd`
($0.5: it does not bind), with the
ledger's folder on this machine's disk and behind a network file system's latency, simulated:
every file-system call the ledger makes through its paths (mkdir, open, read, write, rename)
waits `--latency-ms` first (an NFS round trip is about 0.5 to 2 ms; `flock` and `close` are
round trips there too, which this leaves out, so the figures are a floor). Prints, per latency:
the event loop's blocked time per request (mean and the worst request), and the ledger's writes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path, PosixPath
from typing import Any

from healthbench_exp.model.costs import Budget
from healthbench_exp.model.sweep_budget import LEDGER_FILE, SweepLedger

ESTIMATE_USD = 0.001
COST_USD = 0.0008


class SlowPath(PosixPath):
    """A path whose file-system calls wait `latency_s` first (a network file system's round
    trip); paths made from it (`/`, `with_name`) are slow too."""

    latency_s = 0.0
    writes = 0  # the ledger's rewrites (its partial file written), in this process

    def _wait(self) -> None:
        if self.latency_s:
            time.sleep(self.latency_s)

    def mkdir(self, *args: Any, **kwargs: Any) -> None:
        self._wait()
        super().mkdir(*args, **kwargs)

    def open(self, *args: Any, **kwargs: Any) -> Any:
        self._wait()
        return super().open(*args, **kwargs)

    def read_text(self, *args: Any, **kwargs: Any) -> str:
        self._wait()
        return super().read_text(*args, **kwargs)

    def write_text(self, *args: Any, **kwargs: Any) -> int:
        self._wait()
        SlowPath.writes += 1
        return super().write_text(*args, **kwargs)

    def replace(self, target: Any) -> Any:
        self._wait()
        return super().replace(target)


def blocked_per_request(
    latency_ms: float, requests: int, max_usd: float
) -> tuple[list[float], int]:
    """The seconds each request's reserve + settle held the calling thread, and the ledger's
    rewrites (the job's last, exact one included)."""
    SlowPath.latency_s = latency_ms / 1000
    SlowPath.writes = 0
    with tempfile.TemporaryDirectory() as folder:
        sweep = SlowPath(folder)
        ledger = SweepLedger(max_usd=max_usd, sweep_dir=sweep, own_dir=sweep / "0")
        budget = Budget(None, None, ledger)
        held = []
        for _ in range(requests):
            started = time.perf_counter()
            budget.reserve(ESTIMATE_USD)
            budget.settle(ESTIMATE_USD, COST_USD)
            held.append(time.perf_counter() - started)
        close = getattr(budget, "close", None)
        if close is not None:
            close()
        assert (Path(folder) / LEDGER_FILE).is_file()
    return held, SlowPath.writes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0.0, 1.0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--max-usd", type=float, default=0.5, help="the sweep's cap")
    args = parser.parse_args()
    for latency in args.latency_ms:
        held, writes = blocked_per_request(latency, args.requests, args.max_usd)
        print(
            f"latency {latency:g} ms a file call: event loop blocked "
            f"{statistics.mean(held) * 1e3:.3f} ms per request (worst {max(held) * 1e3:.2f} ms) "
            f"over {args.requests} requests; ledger rewritten {writes} times"
        )


if __name__ == "__main__":
    main()

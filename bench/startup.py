"""Start-up time: from launching `python -m healthbench_exp experiment=demo` to its first request.

    python bench/startup.py --repeat 3                 # the demo, W&B offline, a fresh cache
    python bench/startup.py --repeat 3 wandb=disabled  # extra overrides are passed on

The demo starts its own built-in server; this reads the server's URL from the run's log line and
polls the server's `/stats` until it has seen a request, then prints `first_request_at` minus
the launch time. Interpreter start, imports, Hydra, data loading, starting the server and
checking it is reachable are all inside the figure. It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

URL_LINE = re.compile(r"built-in offline endpoint at (\S+)")


def first_request_at(base_url: str, deadline: float) -> float | None:
    stats_url = base_url.removesuffix("/v1") + "/stats"
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(stats_url, timeout=1) as response:
                seen = json.loads(response.read())["first_request_at"]
        except OSError:
            return None  # the run (and its server) ended before a request was seen
        if seen:
            return seen
        time.sleep(0.005)
    return None


def run_once(overrides: list[str], work: Path) -> float:
    run_dir = work / f"run-{time.monotonic_ns()}"
    command = [
        sys.executable, "-m", "healthbench_exp", "experiment=demo", "runner.progress=false",
        f"hydra.run.dir={run_dir}", *overrides,
    ]  # fmt: skip
    env = {**os.environ, "HEALTHBENCH_CACHE_DIR": str(run_dir / "cache")}
    launched = time.time()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=work
    )
    assert process.stdout is not None
    seen: list[float | None] = []
    poller: threading.Thread | None = None
    for line in process.stdout:  # read to the end, so the run never blocks on a full pipe
        match = URL_LINE.search(line)
        if match and poller is None:
            poller = threading.Thread(
                target=lambda url: seen.append(first_request_at(url, launched + 60)),
                args=(match.group(1),),
            )
            poller.start()
    if poller is not None:
        poller.join()
    if process.wait() != 0:
        raise SystemExit(f"the demo failed (exit {process.returncode})")
    if not seen or seen[0] is None:
        raise SystemExit("no request seen: is the built-in server's log line still logged?")
    return seen[0] - launched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("overrides", nargs="*", help="extra key=value overrides for the demo")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hb-startup-"))
    times = []
    for i in range(args.repeat):
        times.append(run_once(args.overrides, work))
        print(f"run {i + 1}: first request {times[-1]:.2f} s after launch", flush=True)
    if args.repeat > 1:
        print(f"median: {statistics.median(times):.2f} s")


if __name__ == "__main__":
    main()

"""How fast a dead judge is declared, and what is paid after: one run per way a provider fails.

Each case runs `python -m healthbench_exp experiment=demo` (the 24 bundled rows, default
settings but `runner.max_concurrent`, and `runner.max_failure_fraction=1.0`: the failure-fraction
stop, which at its default 0.01 ends an outage mid-run sooner, is left out so that the
dead-endpoint rule is what is measured) with the model on one built-in server (it answers; its
request count is what was paid) and the judge on another with the fault, and prints the time
from the judge's first call to its declaration (read from the stop line), the run's wall time,
the model calls paid and the rows not run. Run from the repository root:

    python bench/dead_endpoint.py [--rows-in-flight 4] [--timeout-s 20]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args

CASES: dict[str, dict[str, object]] = {
    "every call 500": {"fail_status": 500},
    "every call 429 without rate-limit headers": {"fail_status": 429},
    "connection refused (port closed)": {"down_after": 1},
    "never replies": {"silent": True},
    "500 after 40 successes (model replies take 12 s)": {"fail_status": 500, "fail_after": 40},
}


def stats(base_url: str) -> dict[str, float]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as response:
        found: dict[str, float] = json.loads(response.read())
        return found


def run_case(name: str, fault: dict[str, object], rows_in_flight: int, timeout_s: float) -> str:
    slow_model = "fail_after" in fault
    with (
        ServerProcess(server_args(latency_ms=12_000.0 if slow_model else 0.0)) as model,
        ServerProcess(server_args(**fault)) as judge,
        tempfile.TemporaryDirectory() as directory,
    ):
        run_dir = Path(directory) / "run"
        started = time.monotonic()
        result = subprocess.run(
            [
                sys.executable, "-m", "healthbench_exp", "experiment=demo", "wandb=disabled",
                "runner.progress=false", f"runner.max_concurrent={rows_in_flight}",
                "runner.max_failure_fraction=1.0",
                f"runner.request_timeout_s={timeout_s}", "model.builtin=false",
                f"model.base_url={model.base_url}", "judge.builtin=false",
                f"judge.base_url={judge.base_url}", f"hydra.run.dir={run_dir}",
            ],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall = time.monotonic() - started
        line = next((x for x in result.stderr.splitlines() if x.startswith("error:")), "")
        dead = re.search(r"declared dead (\d+) s after its first call", line)
        since = re.search(r"no success in the (\d+) s since its last success", line)
        answered = re.search(r"failed attempts: ([^;]*);", line)
        summary = json.loads((run_dir / "summary.json").read_text())
        return (
            f"{name}: exit {result.returncode}; declared dead "
            f"{dead.group(1) if dead else '?'} s after its first call"
            + (f" ({since.group(1)} s after its last success)" if since else "")
            + f"; wall {wall:.0f} s; model calls paid {stats(model.base_url)['requests']:.0f}"
            f" of 24; rows not run {summary['counts']['rows_not_run']}; answered: "
            f"{answered.group(1) if answered else '?'}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows-in-flight", type=int, default=4)
    parser.add_argument("--timeout-s", type=float, default=20.0, help="runner.request_timeout_s")
    args = parser.parse_args()
    for name, fault in CASES.items():
        print(run_case(name, fault, args.rows_in_flight, args.timeout_s), flush=True)


if __name__ == "__main__":
    main()

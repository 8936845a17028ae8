"""How many paid calls one stopping signal to a 2-job parallel sweep abandons in flight.

`PYTHONPATH=. python bench/sweep_stop.py [--runs N] [--signal INT|TERM] [--to group|main]`:
each run starts `python -m healthbench_exp -m` (the demo's rows on a loopback endpoint whose
replies take 1 s, `hydra/launcher=parallel`, 2 jobs at once) in a session of its own, waits
until both jobs have calls in flight, sends ONE signal (to the whole process group, as a
terminal's Ctrl-C or SLURM's scancel does, or to the main process alone), and counts the
calls each job recorded as abandoned in flight (`invocations.jsonl`). Every call answers
within the 15 s grace, so the count should be 0.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args


def in_flight(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as reply:
        return int(json.loads(reply.read())["in_flight"])


def abandoned(run_dir: Path) -> int:
    path = run_dir / "invocations.jsonl"
    total = 0
    for line in path.read_text().splitlines() if path.exists() else []:
        usage = json.loads(line)["usage"]
        total += sum(usage[role].get("abandoned_in_flight", 0) for role in ("model", "judge"))
    return total


def one_run(base_url: str, folder: Path, signum: int, to_group: bool) -> list[int]:
    sweep = folder / "sweep"
    command = [
        sys.executable, "-m", "healthbench_exp", "-m", "experiment=demo", "wandb=disabled",
        "runner.progress=false", "model.builtin=false", f"model.base_url={base_url}",
        "judge.builtin=false", f"judge.base_url={base_url}", "runner.max_concurrent=2",
        f"cache.dir={folder / 'cache'}", "sampling.temperature=0,0.5",
        "hydra/launcher=parallel", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}",
    ]  # fmt: skip
    with (folder / "sweep.log").open("wb") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + 300
    while not (
        all((sweep / job / "examples.jsonl").exists() for job in "01") and in_flight(base_url) >= 2
    ):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the sweep did not start its jobs; see {folder / 'sweep.log'}")
        time.sleep(0.05)
    if to_group:
        os.killpg(process.pid, signum)
    else:
        process.send_signal(signum)
    process.wait(timeout=120)
    return [abandoned(sweep / job) for job in "01"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--signal", choices=["INT", "TERM"], default="INT")
    parser.add_argument("--to", choices=["group", "main"], default="group")
    args = parser.parse_args()
    signum = signal.Signals[f"SIG{args.signal}"]
    with ServerProcess(server_args(latency_ms=1000)) as server:
        counts = []
        for run in range(args.runs):
            with tempfile.TemporaryDirectory() as folder:
                jobs = one_run(server.base_url, Path(folder), signum, args.to == "group")
            counts.append(sum(jobs))
            print(f"run {run + 1}: abandoned in flight per job {jobs}", flush=True)
    print(f"SIG{args.signal} to the {args.to}: {sum(counts)} calls abandoned over {args.runs} runs")


if __name__ == "__main__":
    main()

"""What the sweep's launcher asks SLURM about its jobs, and what it records for a job SLURM ended.

`slurm_states` reads each job's state from `sacct` (accounting), else from `squeue --states=all`
(which still lists a finished job for SLURM's MinJobAge): without accounting a job that neither
lists any more is gone, so a waiting launcher never polls forever. `record_failure` writes a job
that SLURM ended before the harness did (setup failure, time limit, out of memory, node failure,
scancel) into the job's own folder as `failed`, with the reason and its log, so that the sweep
summary lists it like any other failed job; a job that recorded its own end (`interrupted` by
the time-limit signal, `failed`, ...) keeps it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from omegaconf import OmegaConf

from healthbench_exp.cli.startup import STARTED_MARKERS
from healthbench_exp.core.run_end import Status
from healthbench_exp.engine.stops import resume_hint
from healthbench_exp.output.files import write_status
from healthbench_exp.sweep.jobs import read_json

# SLURM job states after which a job runs no more (`man squeue`, JOB STATE CODES)
FINAL_STATES = {
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT",
}  # fmt: skip
QUERY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class SlurmState:
    """One job as SLURM reports it: its state (`TIMEOUT`, ...) and, from sacct, its exit code."""

    state: str
    exit_code: str = ""

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    def __str__(self) -> str:
        return self.state + (f" (exit code {self.exit_code})" if self.exit_code else "")


def expand_ids(job_id: str) -> list[str]:
    """`123_[0-2,5%4]` (a pending array's tasks, as sacct and squeue print them) ->
    `123_0 123_1 123_2 123_5`; any other id as it is."""
    match = re.fullmatch(r"(\d+)_\[([^\]]+)\]", job_id)
    if match is None:
        return [job_id]
    base, spec = match.group(1), match.group(2).split("%")[0]
    ids = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        ids += [f"{base}_{n}" for n in range(int(low), int(high or low) + 1)]
    return ids


def _query(command: list[str]) -> dict[str, SlurmState]:
    """`JobID|State[|ExitCode]` lines of a SLURM command; empty when it fails (no accounting,
    a job id SLURM no longer knows, the command missing)."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0:
        return {}
    states = {}
    for line in done.stdout.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 2 or not fields[0] or "." in fields[0]:  # job steps: 123.batch
            continue
        state = SlurmState(fields[1].split(" ")[0], fields[2] if len(fields) > 2 else "")
        for job_id in expand_ids(fields[0]):
            states[job_id] = state
    return states


def slurm_states(job_ids: list[str]) -> dict[str, SlurmState]:
    """The state of each job SLURM knows: sacct's, else squeue's; unknown jobs are absent."""
    arrays = ",".join(sorted({job_id.split("_")[0] for job_id in job_ids}))
    states = _query(["sacct", "-n", "-P", "-X", "-o", "JobID,State,ExitCode", "-j", arrays])
    if any(job_id not in states for job_id in job_ids):
        queued = _query(["squeue", "-h", "--states=all", "-o", "%i|%T", "-j", arrays])
        states = {**queued, **states}
    return {job_id: states[job_id] for job_id in job_ids if job_id in states}


def record_failure(job_dir: Path, overrides: list[str], reason: str) -> str:
    """Record in `job_dir` that the job failed for `reason` unless the job recorded its own end;
    return the status the job folder now holds."""
    status = (read_json(job_dir / "status.json") or {}).get("status")
    if status not in (None, Status.RUNNING):
        return str(status)
    recorded = job_dir / ".hydra" / "overrides.yaml"
    if not recorded.exists():  # never started: name the job by its overrides all the same
        recorded.parent.mkdir(parents=True, exist_ok=True)
        OmegaConf.save(OmegaConf.create(list(overrides)), recorded)
    if any((job_dir / marker).exists() for marker in STARTED_MARKERS):
        reason = f"{reason}; finish with: {resume_hint(job_dir)}"
    write_status(job_dir, Status.FAILED, reason)
    return Status.FAILED


def log_tail(path: Path, lines: int = 15) -> str:
    """The last `lines` lines of a job's log, or a note that it has none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])

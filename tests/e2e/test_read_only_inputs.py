"""A finished run and a finished sweep are inputs, read-only to every command but their owner.

End to end, as a user types them: a finished eval run (graded by the reference grader with a
jury, so it can be a bridge's source), a finished meta-eval run, the demo as it comes (its W&B
run offline, in the run's folder), a finished 2-job sweep and the data files they read are made
once; every file under them is hashed (sha256 of its bytes, and its
mtime); then each command that reads a finished run is run on them: `resume=` (a completed run
is left as it is), `aggregate --out` elsewhere, `report` (W&B, no login here), `regrade=`,
`bridge.runs=`, `calibration.meta_eval_run=`, the cache commands that only read, and starts
refused for a bad value (exit 2). After each, every hash and mtime is unchanged and no file was
added or removed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import zygote
from tests.e2e.bridge_runs import AS_OLD, JUDGES, run, write_data
from tests.e2e.test_e2e import run_cli, run_module

Snapshot = dict[str, tuple[str, int]]  # relative path -> (sha256, mtime in ns)


def snapshot(*paths: Path) -> Snapshot:
    """Every file at or under `paths`: its sha256 and mtime."""
    files: Snapshot = {}
    for root in paths:
        for path in sorted([root] if root.is_file() else root.rglob("*")):
            if path.is_file():
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                files[str(path)] = (digest, path.stat().st_mtime_ns)
    return files


class Finished:
    """The finished inputs, made once: runs, a sweep, their data file and response cache."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cache = root / "cache"
        self.env = {"HEALTHBENCH_CACHE_DIR": str(self.cache)}
        self.data = write_data(root, "set", 20)
        self.target = write_data(root, "target", 10)
        # the reference grader with the new judge as a jury member: a bridge source
        self.run = run(
            root / "run", self.cache, *AS_OLD, "jury=[offline]", f"dataset.path={self.data}"
        )
        self.meta = run(root / "meta", self.cache, "task=meta_eval")
        self.demo = root / "demo"  # the demo as it comes: its W&B run offline, in its folder
        made = run_cli(
            "experiment=demo", "runner.progress=false", "sampling.num_examples=4",
            f"hydra.run.dir={self.demo}", env=self.env,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr[-3000:]
        self.sweep = root / "sweep"
        made = run_cli(
            "-m", *JUDGES, "sampling.num_examples=2", "sampling.temperature=0,1",
            f"hydra.sweep.dir={self.sweep}", env=self.env,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr[-3000:]
        self.inputs = (self.run, self.meta, self.demo, self.sweep, self.data, self.target)

    def elsewhere(self, name: str) -> Path:
        """A new directory for a command's own outputs, beside the inputs."""
        return self.root / "out" / name


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Finished]:
    yield Finished(tmp_path_factory.mktemp("read_only"))


def unchanged(finished: Finished, before: Snapshot) -> None:
    after = snapshot(*finished.inputs)
    assert sorted(after) == sorted(before), "files were added or removed"
    changed = [path for path in before if after[path] != before[path]]
    assert changed == [], f"written: {changed}"


def test_resuming_a_completed_run_or_a_sweep_job_leaves_it_as_it_is(finished: Finished) -> None:
    before = snapshot(*finished.inputs)
    for directory in (finished.run, finished.meta, finished.demo, finished.sweep / "1"):
        result = run_cli(f"resume={directory}", env=finished.env)
        assert result.returncode == 0, result.stderr[-2000:]
        assert "nothing to resume, nothing sent, nothing written" in result.stdout
    # a completed run is left as it is, with a change to how it would run too
    changed = run_cli(f"resume={finished.run}", "runner.max_concurrent=4", env=finished.env)
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert "nothing to resume, nothing sent, nothing written" in changed.stdout
    unchanged(finished, before)


def test_aggregate_reads_a_sweep_and_writes_only_where_it_is_told(finished: Finished) -> None:
    before = snapshot(*finished.inputs)
    for name, sources in (
        ("sweep", [finished.sweep]),
        ("runs", [finished.run, finished.demo, finished.sweep]),
    ):
        out = finished.elsewhere(f"aggregate-{name}")
        result = run_module("healthbench_exp.aggregate", *map(str, sources), "--out", str(out))
        assert result.returncode == 0, result.stderr[-2000:]
        assert (out / "sweep_summary.json").exists()
    unchanged(finished, before)


def test_report_without_a_login_reads_nothing_of_the_sweep(finished: Finished) -> None:
    before = snapshot(*finished.inputs)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env["NETRC"] = str(finished.root / "no-netrc")
    result = zygote.run(
        f"group={finished.sweep}", module="healthbench_exp.report", env=env, timeout=120
    )
    assert result.returncode == 2, result.stderr
    unchanged(finished, before)


def test_a_run_that_reads_finished_runs_as_its_sources_writes_only_its_own(
    finished: Finished,
) -> None:
    """A regrade of the run, a bridge from it, a calibration by the meta-eval: each a new run."""
    before = snapshot(*finished.inputs)
    made = [
        run_cli(f"regrade={finished.run}", "judge=offline", "jury=[]", "runner.progress=false",
                f"hydra.run.dir={finished.elsewhere('regrade')}", env=finished.env),
        run_cli(*JUDGES, f"dataset.path={finished.target}", f"bridge.runs=[{finished.run}]",
                f"hydra.run.dir={finished.elsewhere('bridged')}", env=finished.env),
        run_cli(*JUDGES, f"dataset.path={finished.target}",
                f"calibration.meta_eval_run={finished.meta}",
                f"hydra.run.dir={finished.elsewhere('calibrated')}", env=finished.env),
    ]  # fmt: skip
    for result in made:
        assert result.returncode == 0, result.stderr[-2000:]
    unchanged(finished, before)


@pytest.mark.parametrize(
    "command", [["stats"], ["prune", "--older-than", "0d"], ["clear"]], ids=" ".join
)
def test_cache_commands_that_only_read_leave_the_cache_and_the_runs(
    finished: Finished, command: list[str]
) -> None:
    """Without `--yes`, `prune` and `clear` list what they would remove and remove nothing."""
    before = snapshot(*finished.inputs, finished.cache)
    result = run_module("healthbench_exp.cache", *command, "--dir", str(finished.cache))
    assert result.returncode == 0, result.stderr[-2000:]
    after = snapshot(*finished.inputs, finished.cache)
    assert after == before, [p for p in {*before, *after} if before.get(p) != after.get(p)]


def test_a_refused_start_leaves_the_data_file_and_an_existing_run_untouched(
    finished: Finished,
) -> None:
    before = snapshot(*finished.inputs)
    refused = [
        run_cli(*JUDGES, f"dataset.path={finished.data}", "sampling.temperature=3",
                f"hydra.run.dir={finished.run}", env=finished.env),  # into the existing run
        run_cli(*JUDGES, f"dataset.path={finished.data}", "sampling.temperature=3",
                f"hydra.run.dir={finished.elsewhere('refused')}", env=finished.env),
        run_cli(f"resume={finished.sweep}", env=finished.env),  # a sweep, not a run
        # a change to what the run measured (its temperature was 0.5)
        run_cli(f"resume={finished.run}", "sampling.temperature=1", env=finished.env),
    ]  # fmt: skip
    for result in refused:
        assert result.returncode == 2, result.stderr[-2000:]
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    unchanged(finished, before)

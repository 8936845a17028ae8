"""Faults of the machine a run is started on, each one line naming the cause and what to set,
exit 2, nothing lost: a response cache folder that cannot be made, a read-only HOME (where the
Hugging Face cache is), a directory given as the data file; and `hydra.job.chdir=true`, which
keeps paths relative to where the command was typed.

Read-only folders are real: a read-only tmpfs where this process may mount one (root in most CI
containers), else an existing read-only mount, else (an ordinary user) a folder without write
permission; without any, the tests skip (fail under HEALTHBENCH_REQUIRE_TMPFS=1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli
from tests.engine.test_run_stops import no_tmpfs, read_only_mount

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")
SAMPLE = Path(__file__).parents[2] / "healthbench_exp" / "data" / "sample.jsonl"


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder this process cannot create anything in (see the module docstring)."""
    if os.geteuid() != 0:  # permissions bind an ordinary user
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = tmp_path / "read-only-tmpfs"  # root ignores permissions: a read-only file system
    mounted.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=64k,ro", "tmpfs", str(mounted)]
    if subprocess.run(mount, capture_output=True).returncode == 0:
        yield mounted
        subprocess.run(["umount", "-l", str(mounted)], check=False)
        return
    folder = read_only_mount(lambda *_args, **_kwargs: None)  # an existing read-only mount
    if folder is None:
        no_tmpfs("running as root without a read-only file system or mount rights")
    yield folder


def one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def test_a_cache_folder_that_cannot_be_made_is_one_line_naming_it_and_the_key(
    tmp_path, read_only_folder
) -> None:
    cache = read_only_folder / "response-cache"
    run_dir = tmp_path / "run"
    result = run_cli(*DEMO, f"cache.dir={cache}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2, result.stderr
    line = one_error_line(result.stderr)
    assert f"cache.dir {cache} cannot be created (" in line
    assert "point cache.dir at a writable directory or set cache.enabled=false" in line
    assert "Traceback" not in result.stdout + result.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "failed"


def test_a_read_only_home_names_the_hugging_face_cache_and_no_resume(
    tmp_path, read_only_folder, monkeypatch
) -> None:
    """The data is read through `datasets`, which writes under HOME (~/.cache/huggingface): the
    cause is named, with HF_HOME to move it; the run never started, so no resume command."""
    home = read_only_folder
    run_dir = tmp_path / "run"
    for name in ("HF_HOME", "HF_DATASETS_CACHE", "XDG_CACHE_HOME"):  # the caches under HOME
        monkeypatch.delenv(name, raising=False)
    result = run_cli(*DEMO, f"hydra.run.dir={run_dir}", env={"HOME": str(home)})
    assert result.returncode == 2, result.stderr
    line = one_error_line(result.stderr)
    assert f"cannot write the Hugging Face cache {home / '.cache' / 'huggingface'}" in line
    assert "set HF_HOME to a writable folder" in line
    assert "resume=" not in line and "hydra.run.dir" not in line
    assert sorted(p.name for p in run_dir.iterdir()) == ["healthbench.log"]


def test_a_directory_as_the_data_file_says_it_is_a_directory(tmp_path) -> None:
    run_dir = tmp_path / "run"
    result = run_cli(*DEMO, f"dataset.path={tmp_path}", f"hydra.run.dir={run_dir}")
    assert result.returncode == 2
    assert f"dataset.path={tmp_path}: a directory, not a file" in result.stderr
    assert "no such file" not in result.stderr


def test_job_chdir_keeps_paths_relative_to_where_the_command_was_typed(tmp_path) -> None:
    typed_in = tmp_path / "project"
    typed_in.mkdir()
    shutil.copy(SAMPLE, typed_in / "mine.jsonl")
    run_dir = tmp_path / "run"
    result = run_cli(
        *DEMO, "dataset.path=mine.jsonl", "sampling.num_examples=2", "hydra.job.chdir=true",
        f"hydra.run.dir={run_dir}", cwd=typed_in,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["config"]["dataset"]["path"] == str(typed_in / "mine.jsonl")
    assert summary["metrics"]["overall_score:n_samples"] == 2

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
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests import zygote
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
    assert sorted(p.name for p in run_dir.iterdir()) == ["healthbench.log"]  # a start-up check


def test_a_read_only_home_names_the_caches_under_it_and_no_resume(
    tmp_path, read_only_folder, monkeypatch
) -> None:
    """Two folders a run writes are under HOME by default: the response cache and the Hugging
    Face cache (`datasets` keeps its files there even for a local data file). Both are named at
    start-up, with the settings that move them; the run never started, so no resume command and
    nothing but the log. The settings named then make the same run work."""
    home = read_only_folder
    for name in ("HF_HOME", "HF_DATASETS_CACHE", "XDG_CACHE_HOME", "HEALTHBENCH_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)  # the caches under HOME, as for a user
    run_dir = tmp_path / "run"
    result = run_cli(*DEMO, f"hydra.run.dir={run_dir}", env={"HOME": str(home)})
    assert result.returncode == 2, result.stderr
    assert "2 problems, nothing was sent" in result.stderr, result.stderr
    caches = home / ".cache"
    assert f"cache.dir {caches / 'healthbench_exp' / 'cache'} cannot be created" in result.stderr
    assert f"cannot write the Hugging Face cache {caches / 'huggingface'}" in result.stderr
    assert "set HF_HOME to a writable folder" in result.stderr
    assert "resume=" not in result.stderr and "hydra.run.dir" not in result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == ["healthbench.log"]
    moved = run_cli(
        *DEMO, "sampling.num_examples=2", f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={tmp_path / 'moved'}",
        env={"HOME": str(home), "HF_HOME": str(tmp_path / "hf")},
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr


def test_an_existing_read_only_hugging_face_cache_is_named_at_start_up(
    tmp_path, read_only_folder, monkeypatch
) -> None:
    """HF_DATASETS_CACHE names an existing folder this run cannot write in (a shared cache on a
    read-only mount): `datasets` would fail on its lock file once the data loads; it is named at
    start-up with the other problems (here a temperature out of range), and no server started."""
    monkeypatch.delenv("HF_HOME", raising=False)
    run_dir = tmp_path / "run"
    result = run_cli(
        *DEMO, "sampling.temperature=3", f"cache.dir={tmp_path / 'cache'}",
        f"hydra.run.dir={run_dir}", env={"HF_DATASETS_CACHE": str(read_only_folder)},
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "2 problems, nothing was sent" in result.stderr, result.stderr
    assert f"cannot write the Hugging Face cache {read_only_folder} ({read_only_folder} is " in (
        result.stderr
    )
    assert "set HF_HOME to a writable folder" in result.stderr
    assert "built-in offline endpoint" not in result.stderr  # refused before it started
    assert "Traceback" not in result.stdout + result.stderr
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


def test_a_sweep_and_its_aggregate_print_on_a_stdout_short_of_unicode(tmp_path) -> None:
    """Under `PYTHONIOENCODING=ascii` (or `LC_ALL=C` without UTF-8 mode) the sweep's summary and
    `aggregate`'s printout lose only the characters the stream cannot encode (`?`), not the
    whole printout to a UnicodeEncodeError; `--out` a folder that cannot be made is one line."""
    sweep_dir = tmp_path / "sweep"
    result = run_cli(
        "-m", *DEMO, "sampling.num_examples=2", "sampling.seed=1,2",
        f"hydra.sweep.dir={sweep_dir}", env={"PYTHONIOENCODING": "ascii"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "UnicodeEncodeError" not in result.stdout + result.stderr
    assert "Cost of the sweep" in result.stdout and "?" in result.stdout  # the table's `±`
    assert f"sweep summary: {sweep_dir / 'sweep_summary.md'}" in result.stdout
    assert "±" in (sweep_dir / "sweep_summary.md").read_text(encoding="utf-8")  # files: UTF-8
    for ascii_stdout in ({"PYTHONIOENCODING": "ascii"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}):
        aggregated = zygote.run(str(sweep_dir), module="healthbench_exp.aggregate", env={
            **os.environ, "PYTHONCOERCECLOCALE": "0", **ascii_stdout})  # fmt: skip
        assert aggregated.returncode == 0, (ascii_stdout, aggregated.stderr)
        assert "Cost of the sweep" in aggregated.stdout and "written: " in aggregated.stdout
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    out = blocked / "comparison"  # can never be made, whoever runs it
    refused = zygote.run(str(sweep_dir), "--out", str(out), module="healthbench_exp.aggregate")
    assert refused.returncode == 2
    line = one_error_line(refused.stderr)
    assert f"cannot write into {out} ({out}: Not a directory); choose a --out folder" in line


def test_aggregate_into_a_read_only_folder_is_one_line(tmp_path, read_only_folder) -> None:
    sweep_dir = tmp_path / "sweep"
    swept = run_cli("-m", *DEMO, "sampling.num_examples=1", f"hydra.sweep.dir={sweep_dir}")
    assert swept.returncode == 0, swept.stderr
    out = read_only_folder / "comparison"
    refused = zygote.run(str(sweep_dir), "--out", str(out), module="healthbench_exp.aggregate")
    assert refused.returncode == 2, refused.stderr
    line = one_error_line(refused.stderr)
    assert line.startswith(f"error: cannot write into {out} (") and "choose a --out" in line


class RefusingLogin(ThreadingHTTPServer):
    """A W&B server that refuses every API key (401), as api.wandb.ai does a bad one."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                data = json.dumps({"errors": [{"message": "user is not logged in"}]}).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST

        super().__init__(("127.0.0.1", 0), Handler)


def test_a_report_with_a_bad_wandb_key_is_one_line(tmp_path) -> None:
    server = RefusingLogin()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env |= {"WANDB_API_KEY": "k" * 40, "WANDB_BASE_URL": url, "NETRC": str(tmp_path / "none"),
            "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config")}  # fmt: skip
    try:
        result = zygote.run("group=multirun/x", module="healthbench_exp.report", env=env)
    finally:
        server.shutdown()
        server.server_close()
    assert result.returncode == 2, result.stderr
    line = one_error_line(result.stderr)
    assert f"W&B at {url} did not take the report (" in line
    # W&B's own words for the 401: newer versions, and the floor's (wandb 0.18)
    assert "user is not logged in" in line or "Error 401: Unauthorized" in line, line
    assert "wandb login --relogin" in line

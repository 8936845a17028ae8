"""Every file of a run directory is written by `output` (the sinks and `output.run_dir`).

The runs here are the real CLI under an audit hook (`sinks_files_audit.py`) that notes, for each
file opened for writing, renamed onto or opened as a database in the run directory, the module
that wrote it. Besides `output/`, only these may write there: Hydra (`.hydra/`, the job's log),
the run lock and the response cache's call journal. A static scan checks the same for code the
runs do not reach: no module outside `output/` opens a file for writing, but the few listed.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.output.files import foreign_files
from healthbench_exp.output.run_dir import RunDirectory
from tests import zygote
from tests.e2e.test_e2e import REPO
from tests.engine.test_serve import LIGHT, stand_in_env
from tests.model.test_cache import endpoint_args
from tests.zygote import ForkedServer

AUDIT = Path(__file__).with_name("sinks_files_audit.py")
PACKAGE = REPO / "healthbench_exp"

# what a run directory holds that `output` does not write: path (a folder ends in /) -> writer
NOT_OUTPUT = {
    ".lock": "cli/run_lock.py",  # the run lock: held while the run goes, not a record
    ".hydra/": "hydra",  # Hydra's job setup (a resume's own: output.run_dir)
    "healthbench.log": "hydra",  # the job's log, Hydra's logging setup
    ".calls/": "model/cache/database.py",  # cache.enabled=false: the response cache's own store
}


def allowed(record: dict[str, str]) -> bool:
    if record["writer"].startswith("output/"):
        return True
    return any(
        record["path"] == name or (name.endswith("/") and record["path"].startswith(name))
        for name, writer in NOT_OUTPUT.items()
        if record["writer"] == writer
    )


def audited_run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> tuple[Path, list[dict[str, str]]]:
    """Run the CLI under the audit hook: its run directory and who wrote what in it."""
    run_dir = tmp_path.resolve() / "run"
    record = tmp_path / "writes.jsonl"
    result = zygote.run(  # the audit script as a module, forked (tests/zygote.py)
        str(run_dir), str(record), *args, f"hydra.run.dir={run_dir}",
        module="tests.output.sinks_files_audit", env=env, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    lines = record.read_text(encoding="utf-8").splitlines()
    return run_dir, [json.loads(line) for line in lines]


def writers_of(records: list[dict[str, str]], path: str) -> set[str]:
    return {r["writer"] for r in records if r["path"] == path}


def test_every_file_the_demo_writes_is_written_by_output(tmp_path: Path) -> None:
    run_dir, records = audited_run(tmp_path, *LIGHT)  # the demo, 3 examples: every kind of file
    assert (
        json.loads((run_dir / "status.json").read_text(encoding="utf-8"))["status"] == "completed"
    )
    assert [r for r in records if not allowed(r)] == []
    # the hook saw the files (not an empty list by accident), each written by output
    assert writers_of(records, "status.json") == {"output/files.py"}
    assert writers_of(records, "invocations.jsonl") == {"output/run_dir.py"}
    assert writers_of(records, "examples.jsonl") == {"output/files.py"}
    assert writers_of(records, "healthbench.log") == {"hydra"}
    assert writers_of(records, ".lock") == {"cli/run_lock.py"}
    # and nothing in the directory came from elsewhere: each entry has a writer the hook saw
    seen = {r["path"].split("/")[0] for r in records}
    assert {p.name for p in run_dir.iterdir()} <= seen
    assert foreign_files(run_dir) == []  # a resume's ownership check knows every name


def test_a_batch_judges_record_is_written_by_output(tmp_path: Path) -> None:
    with ForkedServer(server_args()) as server:
        run_dir, records = audited_run(
            tmp_path, *endpoint_args(server.base_url), "sampling.num_examples=3",
            "judge.batch=true", "judge.batch_poll_s=0.05", "cache.enabled=false",
        )  # fmt: skip
    assert json.loads((run_dir / "batches.json").read_text(encoding="utf-8"))
    assert [r for r in records if not allowed(r)] == []
    assert writers_of(records, "batches.json") == {"output/files.py"}  # RunDirectory's write_json
    assert foreign_files(run_dir) == []
    journal = {r["writer"] for r in records if r["path"].startswith(".calls/")}
    assert journal == {"model/cache/database.py"}  # cache.enabled=false: the run's own call journal


def test_a_served_models_log_is_written_by_output(tmp_path: Path) -> None:
    run_dir, records = audited_run(
        tmp_path, *LIGHT, "model=vllm", "model.name=org/model-a", env=stand_in_env()
    )
    assert "healthbench-exp: the server " in (run_dir / "vllm.log").read_text()
    assert [r for r in records if not allowed(r)] == []
    assert writers_of(records, "vllm.log") == {"output/run_dir.py"}  # at start, and at stop
    assert foreign_files(run_dir) == []


def test_a_jury_members_batch_record_and_a_pilot_are_a_runs_own_files(tmp_path: Path) -> None:
    """Written through `RunDirectory` too (`write_batches`, `within`): a resume accepts them."""
    run_dir = RunDirectory(tmp_path)
    run_dir.write_batches("batches-judge-b.json", [{"id": "batch_1", "requests": 2}])
    run_dir.within("pilot").append_invocation({"invocation": 1})
    (tmp_path / "notes.txt").write_text("mine")
    assert foreign_files(tmp_path) == ["notes.txt"]
    assert json.loads((tmp_path / "batches-judge-b.json").read_text()) == [
        {"id": "batch_1", "requests": 2}
    ]


# -- the same for code the runs above do not reach: a scan of the source ---------------------

# modules outside output/ that open a file for writing, and what they write (never a run's file)
WRITERS_OUTSIDE_OUTPUT = {
    "cli/run_lock.py": "the run lock, .lock",
    "core/standard_streams.py": "/dev/null, opened on a standard stream no one reads",
    "core/stop_signals.py": "a stop level passed on to children (a sweep's .stopping, the kit's)",
    "data/healthbench.py": "the downloaded HealthBench files, in the data cache",
    "model/cache/claims.py": "the response cache's claims (claims.lock), in the cache folder",
    "model/sweep_budget.py": "a sweep's budget ledger and its lock, in the sweep's directory",
    "sweep/aggregate.py": "a sweep's summary and page, in the sweep's directory",
    "sweep/markdown.py": "a sweep's CSV table, in the sweep's directory",
}
WRITE_MODE = set("wax+")


def writes(call: ast.Call) -> str | None:
    """What `call` writes with: `write_text`, `open('w')`, ..., or None for no file write."""
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name in ("write_text", "write_bytes", "dump"):
        return name
    if name not in ("open", "fdopen"):
        return None
    owner = func.value if isinstance(func, ast.Attribute) else None
    module = owner.id if isinstance(owner, ast.Name) else None
    if module == "os" and name == "open":
        return "os.open"
    mode_at = 1 if isinstance(func, ast.Name) or module in ("io", "gzip") else 0  # path.open(mode)
    modes = [k.value for k in call.keywords if k.arg == "mode"] + call.args[mode_at : mode_at + 1]
    mode = modes[0].value if modes and isinstance(modes[0], ast.Constant) else None
    return f"open({mode!r})" if isinstance(mode, str) and set(mode) & WRITE_MODE else None


def file_writers(root: Path) -> dict[str, list[str]]:
    """Module (relative to `root`) -> its file writes, `line: how`."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            how = writes(node) if isinstance(node, ast.Call) else None
            if how is not None:
                found.setdefault(path.relative_to(root).as_posix(), []).append(
                    f"{node.lineno}: {how}"
                )
    return found


def test_no_module_outside_output_writes_a_file_but_the_listed_ones() -> None:
    outside = {
        module: lines
        for module, lines in file_writers(PACKAGE).items()
        if not module.startswith(("output/", "builtin_endpoint/"))  # the stand-in endpoint
    }
    assert set(outside) == set(WRITERS_OUTSIDE_OUTPUT), outside


@pytest.mark.parametrize(
    "source",
    [
        "open(p, 'w')", "open(p, mode='a')", "p.open('ab')", "p.write_text('x')",
        "json.dump(d, f)", "os.open(p, os.O_CREAT)", "io.open(p, 'r+')",
    ],
)  # fmt: skip
def test_the_scan_sees_each_way_of_writing(tmp_path: Path, source: str) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "m.py").write_text(f"{source}\nopen(p)\np.open()\n", encoding="utf-8")
    assert list(file_writers(tmp_path)) == ["model/m.py"]
    assert len(file_writers(tmp_path)["model/m.py"]) == 1  # reading is not writing


def test_the_demo_folders_writers_name_real_modules() -> None:
    for module in [*WRITERS_OUTSIDE_OUTPUT, *(w for w in NOT_OUTPUT.values() if w != "hydra")]:
        assert (PACKAGE / module).is_file(), module
    assert os.path.isfile(AUDIT)

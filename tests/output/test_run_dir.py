"""`output.run_dir.RunDirectory`: a failed write into the run directory names its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from healthbench_exp.core.errors import OutputWriteError
from healthbench_exp.core.run_files import INVOCATIONS_FILE
from healthbench_exp.output.run_dir import ESTIMATE_FILE, HYDRA_DIR, RunDirectory


def test_each_write_that_fails_raises_output_write_error_naming_its_file(tmp_path: Path) -> None:
    # a directory where the file should be: the OS refuses each write with an OSError
    for name in (INVOCATIONS_FILE, "batches.json", ESTIMATE_FILE):
        (tmp_path / name).mkdir()
    (tmp_path / HYDRA_DIR).write_text("not a folder", encoding="utf-8")
    run_dir = RunDirectory(tmp_path)
    writes = {
        INVOCATIONS_FILE: lambda: run_dir.append_invocation({"invocation": 1}),
        "batches.json": lambda: run_dir.write_batches("batches.json", [{"id": "b"}]),
        ESTIMATE_FILE: lambda: run_dir.write_estimate({"requests": 1}),
        HYDRA_DIR: lambda: run_dir.write_hydra_config({"config.yaml": "a: 1\n"}),
    }
    for name, write in writes.items():
        with pytest.raises(OutputWriteError) as caught:
            write()
        assert caught.value.path == tmp_path / name
        assert str(tmp_path / name) in str(caught.value)


def test_an_invocation_is_one_json_line_appended(tmp_path: Path) -> None:
    run_dir = RunDirectory(tmp_path / "run")
    run_dir.append_invocation({"invocation": 1, "note": "é"})
    run_dir.append_invocation({"invocation": 2})
    lines = (tmp_path / "run" / INVOCATIONS_FILE).read_text(encoding="utf-8").splitlines()
    assert lines == ['{"invocation": 1, "note": "é"}', '{"invocation": 2}']

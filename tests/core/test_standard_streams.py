"""`core.standard_streams`: a standard stream whose reader is gone drops its writes and points
its descriptor at /dev/null (the end-to-end runs: tests/e2e/test_first_hour_runs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from healthbench_exp.core.standard_streams import QuietStream

REPO = Path(__file__).resolve().parents[2]


def test_a_stream_whose_reader_is_gone_drops_writes_and_goes_to_dev_null() -> None:
    read, write = os.pipe()
    os.close(read)
    raw = open(write, "w", encoding="utf-8")  # noqa: SIM115  (closed below)
    stream = QuietStream(raw)
    try:
        assert stream.write("a line no one reads\n") == len("a line no one reads\n")
        stream.flush()  # the pipe's reader is gone: EPIPE, taken
        assert stream.gone
        null = os.stat(os.devnull)
        assert os.fstat(write).st_rdev == null.st_rdev  # later writers write nowhere
        print("and more", file=stream, flush=True)
        stream.writelines(["x\n", "y\n"])
        assert stream.fileno() == write and stream.encoding == "utf-8"  # the rest: the stream's
    finally:
        raw.close()


def test_a_closed_stream_is_gone_too_and_other_errors_are_raised() -> None:
    read, write = os.pipe()
    raw = open(write, "w", encoding="utf-8")  # noqa: SIM115
    raw.close()
    os.close(read)
    stream = QuietStream(raw)
    stream.write("after close")
    assert stream.gone
    with pytest.raises(TypeError):
        QuietStream(sys.stdout).write(b"bytes")  # type: ignore[arg-type]


CHILD = """
import os, sys
from healthbench_exp.core.standard_streams import guard
fd = int(sys.argv[1])
guard()
opened = open(sys.argv[2], "w")
assert opened.fileno() > 2, opened.fileno()
assert os.path.samefile(f"/proc/self/fd/{fd}", os.devnull)
print("printed")
sys.stderr.write("warned")
"""


@pytest.mark.parametrize("fd", [0, 1, 2])
def test_a_standard_descriptor_closed_at_the_start_is_dev_null(tmp_path: Path, fd: int) -> None:
    """No file the process opens takes a closed standard descriptor's number."""
    (tmp_path / "child.py").write_text(CHILD)
    command = f"{sys.executable} {tmp_path / 'child.py'} {fd} {tmp_path / 'file'} {fd}>&-"
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert ("printed" in result.stdout) == (fd != 1)
    assert ("warned" in result.stderr) == (fd != 2)

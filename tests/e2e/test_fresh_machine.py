"""The README's test command on a machine without Chromium: the browser test is skipped with a
reason that says how to run it, except where CI requires it (HEALTHBENCH_REQUIRE_BROWSER=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_e2e import REPO

pytestmark = pytest.mark.slow  # runs pytest itself in a subprocess: `pytest -m slow`

PROBE = """
from pathlib import Path

from tests.sweep.test_aggregate import render

def test_render(tmp_path):
    page = tmp_path / "page.html"
    page.write_text("<html><body>ok</body></html>")
    assert "ok" in render(page, tmp_path)
"""


def run_probe(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    """pytest on a test that renders a page, with no Chromium on PATH."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    variables = {k: v for k, v in os.environ.items() if k != "HEALTHBENCH_REQUIRE_BROWSER"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(probe)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**variables, "PATH": str(empty), "PYTHONPATH": str(REPO), **env},
    )  # fmt: skip


def test_without_chromium_the_browser_test_is_skipped_saying_how_to_run_it(tmp_path) -> None:
    result = run_probe(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "no Chromium on PATH: install Chromium (Debian package `chromium`)" in result.stdout


def test_ci_requires_the_browser(tmp_path) -> None:
    result = run_probe(tmp_path, HEALTHBENCH_REQUIRE_BROWSER="1")
    assert result.returncode == 1 and "1 failed" in result.stdout
    assert "HEALTHBENCH_REQUIRE_BROWSER=1 but no Chromium on PATH" in result.stdout


def test_ci_says_the_browser_is_required() -> None:
    script = (REPO / ".ci" / "run").read_text()
    assert "export HEALTHBENCH_REQUIRE_BROWSER=1" in script
    assert script.index("apt-get install") < script.index("HEALTHBENCH_REQUIRE_BROWSER=1")
    assert script.index("HEALTHBENCH_REQUIRE_BROWSER=1") < script.index("python -m pytest")

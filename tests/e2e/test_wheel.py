"""The package as a user installs it: a built wheel holds its configs and data, and runs the demo.

`pip wheel` builds the wheel from a clean copy of this checkout, as `pip install .` would; the
test checks that the wheel holds every Hydra config, the bundled sample rows, the grader template
and the consensus criteria, each once; then it unpacks the wheel into a temporary folder and runs
the offline demo from there, in a working directory outside the repository, so that nothing is
found through the checkout. The dependencies come from the test environment; `.ci/run` also
installs the wheel with its dependencies into a fresh virtual environment and runs the demo there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.test_e2e import REPO

pytestmark = pytest.mark.slow  # builds and installs a wheel: `pytest -m slow`

PACKAGE = REPO / "healthbench_exp"
PLUGIN = REPO / "healthbench"  # the `verifiers` taskset's id: a tiny package beside ours
LAUNCHER = REPO / "hydra_plugins" / "healthbench_exp_launcher"  # hydra/launcher=healthbench_slurm
DEMO_SCORE = 0.2879  # the demo's overall score against the built-in endpoint, to 4 places


def clean_source(into: Path) -> Path:
    """A copy of what a build reads (pyproject, README, the package) without build leftovers.

    Building in the checkout itself would let setuptools take files from a stale
    `healthbench_exp.egg-info/SOURCES.txt` or `build/` left by an editable install, and so ship
    configs that the package-data globs miss.
    """
    source = into / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in (PACKAGE, PLUGIN, LAUNCHER):
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(package, source / package.relative_to(REPO), ignore=ignore)
    return source


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clean copy of this checkout (pip's isolated build, no deps)."""
    out = tmp_path_factory.mktemp("dist")
    source = clean_source(out)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
        capture_output=True, text=True, timeout=300, cwd=out,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    (built,) = out.glob("healthbench_exp-*.whl")
    return built


def test_the_wheel_holds_every_config_and_data_file_once(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert [n for n, count in Counter(names).items() if count > 1] == []
    needed = [
        *PACKAGE.glob("conf/**/*.yaml"),
        *PACKAGE.glob("data/*.jsonl"),
        *PACKAGE.glob("published/*.csv"),
        *PACKAGE.glob("reference/*"),
        *PACKAGE.rglob("*.py"),
        *PLUGIN.rglob("*.py"),
        *LAUNCHER.rglob("*.py"),
    ]
    needed = [p for p in needed if "__pycache__" not in p.parts]
    assert len([p for p in needed if p.suffix == ".yaml"]) > 20
    missing = [
        str(p.relative_to(REPO)) for p in needed if p.relative_to(REPO).as_posix() not in names
    ]
    assert missing == [], f"not in the wheel (pyproject package-data): {missing}"
    packaged = [n for n in names if not n.startswith("healthbench_exp-")]  # not the dist-info
    roots = ("healthbench_exp/", "healthbench/", "hydra_plugins/healthbench_exp_launcher/")
    assert all(n.startswith(roots) for n in packaged), packaged
    assert not [n for n in packaged if "__pycache__" in n or n.endswith(".pyc")]
    assert len(packaged) == len(needed)  # nothing else: no tests, no caches, no stray files


def test_the_demo_runs_from_the_unpacked_wheel_outside_the_repository(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(site),  # ahead of an editable install of the checkout
        "HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache"),
    }
    where = subprocess.run(
        [sys.executable, "-c", "import healthbench_exp; print(healthbench_exp.__file__)"],
        capture_output=True, text=True, timeout=60, cwd=elsewhere, env=env,
    )  # fmt: skip
    assert Path(where.stdout.strip()) == site / "healthbench_exp" / "__init__.py", where.stderr
    out = tmp_path / "demo"
    demo = subprocess.run(
        [sys.executable, "-m", "healthbench_exp", "experiment=demo", f"hydra.run.dir={out}"],
        capture_output=True, text=True, timeout=300, cwd=elsewhere, env=env,
    )  # fmt: skip
    assert demo.returncode == 0, demo.stdout + demo.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert round(summary["metrics"]["overall_score"], 4) == DEMO_SCORE
    assert (out / "report.html").is_file() and (out / "examples.jsonl").is_file()
    assert not (elsewhere / "outputs").exists()  # nothing written where it was run from

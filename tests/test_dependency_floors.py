"""What pip may install is what the tests ran: `.ci/floors.txt` pins each direct dependency of
pyproject.toml to the lowest version it allows, and `.ci/run` runs the default group in a venv
installed with those pins (`HEALTHBENCH_REQUIRE_FLOORS=1` there: the versions installed must be
the floors, checked below), beside the newest versions of the main venv."""

from __future__ import annotations

import os
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]
FLOORS = REPO / ".ci" / "floors.txt"


def declared_floors() -> dict[str, Version]:
    """Each direct dependency of pyproject.toml with a lowest version (`>=`): its floor."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    floors = {}
    for line in project["dependencies"]:
        requirement = Requirement(line)
        lowest = [s.version for s in requirement.specifier if s.operator == ">="]
        if lowest:
            floors[requirement.name] = Version(lowest[0])
    return floors


def pinned() -> dict[str, Version]:
    """`.ci/floors.txt`: name == version, one a line (comments and blank lines aside)."""
    pins = {}
    for line in FLOORS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, exact = line.partition("==")
            pins[name.strip()] = Version(exact)
    return pins


def test_the_floors_file_pins_every_declared_floor() -> None:
    assert pinned() == declared_floors()


@pytest.mark.skipif(
    os.environ.get("HEALTHBENCH_REQUIRE_FLOORS") != "1",
    reason="the floors venv of .ci/run only (HEALTHBENCH_REQUIRE_FLOORS=1)",
)
def test_the_floors_venv_has_the_floors_installed() -> None:
    installed = {name: Version(version(name)) for name in pinned()}
    assert installed == pinned()

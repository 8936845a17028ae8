"""Every pacing test runs on the fake clock (`testing/fake_clock.py`): an AST scan of the
pacer's and the built-in limiter's test files finds no wall-clock read or sleep (the `time`
module, `asyncio.sleep` of more than 0, `asyncio.wait_for`'s wall-clock timeout), and the
wall clock (`SYSTEM_CLOCK`) only where a test talks to the built-in server in its own process
(a function taking `loopback_server` or that server's `base_url`), whose limits refill on it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
PACING = sorted(
    [
        *TESTS.glob("model/test_ratelimit*.py"),
        *TESTS.glob("model/test_pacer*.py"),
        TESTS / "builtin_endpoint" / "test_limits.py",
    ]
)
SERVER_PROCESS = {"loopback_server", "base_url"}  # a server of its own, on the wall clock


def wall_clock_uses(source: str) -> list[str]:
    """Each wall-clock read or sleep in `source`, as "line N: what" (none: an empty list)."""
    found: list[str] = []
    allowed: set[int] = set()  # lines of the functions that talk to a server process
    tree = ast.parse(source)
    functions = (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
    for function in functions:
        if SERVER_PROCESS & {arg.arg for arg in function.args.args}:
            allowed.update(range(function.lineno, (function.end_lineno or function.lineno) + 1))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names]
            if "time" in names or (isinstance(node, ast.ImportFrom) and node.module == "time"):
                found.append(f"line {line}: imports time")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = f"{owner.id}.{node.func.attr}" if isinstance(owner, ast.Name) else ""
            zero = bool(node.args) and isinstance(node.args[0], ast.Constant)
            zero = zero and node.args[0].value == 0  # type: ignore[attr-defined]
            if name == "asyncio.sleep" and not zero:
                found.append(f"line {line}: asyncio.sleep of more than 0")
            elif name == "asyncio.wait_for":
                found.append(f"line {line}: asyncio.wait_for (a wall-clock timeout)")
        elif isinstance(node, ast.Name) and node.id == "SYSTEM_CLOCK" and line not in allowed:
            found.append(f"line {line}: SYSTEM_CLOCK outside a test of a server process")
    return sorted(found, key=lambda use: int(use.split(":")[0].removeprefix("line ")))


@pytest.mark.parametrize("path", PACING, ids=[path.name for path in PACING])
def test_pacing_tests_neither_sleep_nor_read_the_wall_clock(path: Path) -> None:
    assert wall_clock_uses(path.read_text()) == [], path.name


def test_the_scan_finds_each_kind_of_wall_clock_use() -> None:
    source = (
        "import time\nimport asyncio\nfrom x import SYSTEM_CLOCK\n"
        "def test_a(): time.monotonic(); asyncio.sleep(0.1); asyncio.sleep(0)\n"
        "async def test_b(): await asyncio.wait_for(f(), timeout=1.0); SYSTEM_CLOCK\n"
        "def test_c(loopback_server): SYSTEM_CLOCK\n"
    )
    assert sorted(wall_clock_uses(source)) == [
        "line 1: imports time",
        "line 4: asyncio.sleep of more than 0",
        "line 5: SYSTEM_CLOCK outside a test of a server process",
        "line 5: asyncio.wait_for (a wall-clock timeout)",
    ]
    assert len(PACING) >= 8  # the files it scans are there

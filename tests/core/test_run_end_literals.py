"""How a run ends is typed once (`core.run_end`): no literal exit code or run status elsewhere.

The package and its Hydra launcher are read with `ast` (nothing is imported). Flagged:

- an exit code written as a number: `SystemExit(2)`, `sys.exit(1)`, `os._exit(1)`, `exit(0)`,
  `128 + signum` (use `Exit.signalled`), or a number returned by a `main` function;
- a run status written as a string (`"completed"`, `"interrupted"`, ... : `Status`'s values)
  where a status is compared (`status == "failed"`, `row.get("status") != "dry_run"`,
  `status in (None, "running")`) or handed to a function about statuses (`write_status(d,
  "failed")`).

The modules that speak OpenAI's own statuses (a Responses API reply's, `wire` and the built-in
endpoint's) are not the run's and are left out (`API_STATUSES`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from healthbench_exp.core.run_end import Status

REPO = Path(__file__).resolve().parents[2]
SCANNED = (REPO / "healthbench_exp", REPO / "hydra_plugins")
OWNER = REPO / "healthbench_exp" / "core" / "run_end.py"
API_STATUSES = frozenset(
    {
        REPO / "healthbench_exp" / "model" / "wire.py",  # a Responses API reply's status
        REPO / "healthbench_exp" / "builtin_endpoint" / "responses.py",  # the same, served
    }
)
EXITS = frozenset({"SystemExit", "sys.exit", "os._exit", "exit", "quit"})
STATUSES = frozenset(status.value for status in Status)


def _int(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int)
        and not isinstance(node.value, bool)
    )


def _signal_sum(node: ast.AST) -> bool:
    """`128 + x` (or `x + 128`): the shell's convention, spelt out."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and any(_int(side) and side.value == 128 for side in (node.left, node.right))  # type: ignore[attr-defined]
    )


def _status_strings(node: ast.AST) -> list[str]:
    """The run statuses written as strings in `node` (a string, or a tuple/list/set of them)."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [
        item.value
        for item in items
        if isinstance(item, ast.Constant) and isinstance(item.value, str)
        if item.value in STATUSES
    ]


def literals(source: str, api_statuses: bool = False) -> list[str]:
    """`line: what` for each literal exit code or run status in `source`, by line (statuses not
    looked for where `api_statuses`: the module speaks OpenAI's)."""
    return sorted(_literals(source, api_statuses), key=lambda found: int(found.split(":")[0]))


def _literals(source: str, api_statuses: bool) -> Iterator[str]:
    tree = ast.parse(source)
    mains = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name == "main"
        for node in ast.walk(function)
        if isinstance(node, ast.Return)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in EXITS and node.args and (_int(node.args[0]) or _signal_sum(node.args[0])):
                yield f"{node.lineno}: exit code {ast.unparse(node.args[0])} (use Exit)"
            if "status" in name.lower() and not api_statuses:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    for found in _status_strings(arg):
                        yield f"{node.lineno}: status {found!r} handed to {name} (use Status)"
        elif isinstance(node, ast.Return) and id(node) in mains and node.value is not None:
            if _int(node.value):
                yield f"{node.lineno}: main returns {ast.unparse(node.value)} (use Exit)"
        elif isinstance(node, ast.Compare) and not api_statuses:
            sides = [node.left, *node.comparators]
            if not any("status" in ast.unparse(side).lower() for side in sides):
                continue
            for side in sides:
                for found in _status_strings(side):
                    yield f"{node.lineno}: status {found!r} compared (use Status)"


def found_in(roots: tuple[Path, ...]) -> list[str]:
    return [
        f"{path.relative_to(REPO)}:{problem}"
        for root in roots
        for path in sorted(root.rglob("*.py"))
        if path != OWNER
        for problem in literals(path.read_text(encoding="utf-8"), path in API_STATUSES)
    ]


def test_no_literal_exit_code_or_status_outside_run_end() -> None:
    problems = found_in(SCANNED)
    assert not problems, "\n".join(problems)


def test_the_check_finds_each_kind_of_literal() -> None:
    source = """
import os, sys
def main():
    if x:
        return 2
    return Exit.COMPLETED
def stop(signum, row, job_dir):
    os._exit(1)
    sys.exit(2)
    raise SystemExit(128 + signum)
    if row.get("status") != "dry_run":
        write_status(job_dir, "failed", "why")
    ok = status not in (None, "running")
    raise SystemExit(Exit.signalled(signum))
    fine = {"status": "completed"}, state == "completed"
"""
    found = [line.split(": ", 1)[1] for line in literals(source)]
    assert found == [
        "main returns 2 (use Exit)",
        "exit code 1 (use Exit)",
        "exit code 2 (use Exit)",
        "exit code 128 + signum (use Exit)",
        "status 'dry_run' compared (use Status)",
        "status 'failed' handed to write_status (use Status)",
        "status 'running' compared (use Status)",
    ], found
    assert literals(source, api_statuses=True) == [
        f"{n}: {what}"
        for n, what in [
            (5, "main returns 2 (use Exit)"),
            (8, "exit code 1 (use Exit)"),
            (9, "exit code 2 (use Exit)"),
            (10, "exit code 128 + signum (use Exit)"),
        ]
    ]

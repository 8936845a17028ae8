"""The package's architecture, checked on every CI run: the layer rules of docs/architecture.md.

`healthbench_exp` is built in layers; a lower layer never imports a higher one. This module reads
every module of the package with `ast` (nothing is imported or executed) and checks one rule per
test, so a failure names the rule and each offending import with its module and line:

- no import cycle between the package's modules, counting imports inside functions and under
  `if TYPE_CHECKING:`;
- the layer table (`ALLOWED`): which layers each layer may import;
- no package-internal import inside a function (optional third-party imports may be lazy);
- Hydra and OmegaConf only in `cli` (and the sweep layer, for the sweep-summary callback);
- production code never imports `healthbench_exp.testing` (test-only fakes);
- the built-in endpoint (`builtin_endpoint`) is imported only where it is started
  (`engine/builtin.py`) and by the `offline_server` entry module;
- `core` imports the standard library only;
- the bridge (`grading.bridge`, a package) imports only `core`, itself, numpy and the standard
  library: one wing, readable on its own;
- the response cache (`model.cache`, a package) imports only `core`, `config`,
  `model.reply_json`, itself and the standard library; inside it each part imports only the
  parts below it (`CACHE.parts`), and code outside it imports its face (`__init__`) or its
  command line's verbs (`commands`), never its other parts;
- the pacer (`model.pacer`, a package) imports only `model.clock`, itself and the standard
  library; inside it each part imports only the parts below it (`PACER.parts`), and only the
  endpoint's modules (`PACER.users`) import it, through its face;
- the map in the face's docstring of each of those two packages names every part of it;
- no module over `MAX_LINES` lines.

A module's layer is the first sub-package under `healthbench_exp/` (`healthbench_exp.model.cache`
is in `model`); the package root's own modules (`__init__`, `__main__` and the entry modules
`aggregate`, `report`, `offline_server`) are the root layer, which may import any layer, while no
layer may import the package root. A sub-package missing from the table is itself a violation.

`test_the_checker_reports_each_kind_of_violation` runs the same checks on a small package written
into a temporary folder with one violation of each kind, so the checks cannot pass by seeing
nothing.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "healthbench_exp"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE
ROOT = ""  # the layer of the package root's own modules

# layer -> the other layers it may import (every layer may import itself)
ALLOWED: dict[str, frozenset[str]] = {
    "core": frozenset(),
    "config": frozenset({"core"}),
    "data": frozenset({"core", "config"}),
    "model": frozenset({"core", "config"}),
    "grading": frozenset({"core"}),
    "tasks": frozenset({"core", "config", "data", "model", "grading"}),
    # the published numbers and the comparison with them (docs/reproducing.md)
    "published": frozenset({"core", "config", "grading"}),
    "engine": frozenset(
        {"core", "config", "data", "model", "grading", "tasks", "builtin_endpoint", "published"}
    ),
    "output": frozenset({"core", "config", "grading", "published"}),
    "sweep": frozenset({"core", "config", "grading", "output", "published"}),
    "cli": frozenset(
        {"core", "config", "data", "model", "grading", "tasks", "engine", "output", "sweep"}
        | {"published"}
    ),
    # the built-in OpenAI-compatible endpoint: production code (the demo's server)
    "builtin_endpoint": frozenset({"core", "config", "model"}),
    # test-only fakes (the fake clock): no production module imports them (production_testing_rule)
    "testing": frozenset({"core", "config", "model"}),
    # other tools' entry points (the verifiers taskset): a top layer beside cli; none imports it
    "integrations": frozenset({"core", "config", "data", "model", "grading", "tasks", "output"}),
}
ALLOWED[ROOT] = frozenset(ALLOWED)  # the entry modules and the public API may import any layer

HYDRA = frozenset({"hydra", "omegaconf"})
HYDRA_LAYERS = frozenset({"cli", "sweep"})  # sweep: the sweep-summary callback (a Hydra callback)
TESTING = "testing"
BUILTIN = "builtin_endpoint"
# the modules that may import the built-in endpoint: where it is started for a run, and the root
# entry module that serves it (`python -m healthbench_exp.offline_server`)
BUILTIN_STARTERS = frozenset({f"{PACKAGE}.engine.builtin", f"{PACKAGE}.offline_server"})
CORE = "core"
MAX_LINES = 400
BRIDGE = f"{PACKAGE}.grading.bridge"
BRIDGE_THIRD_PARTY = frozenset({"numpy"})


@dataclass(frozen=True)
class Room:
    """A package inside a layer that is held to imports of its own (the cache, the pacer).

    `package`: its dotted name; `title`: how a report names it; `outside`: the package modules
    (or sub-packages) it may import besides itself, and `outside_text` the same in words (it
    imports no third-party module); `parts`: each of its modules -> the others it may import
    (its face, `__init__`, may import any; a part not listed, none); `faces`: what code
    outside it may import; `users`: the only modules outside it that may (None: any).
    """

    package: str
    title: str
    outside: tuple[str, ...]
    outside_text: str
    parts: dict[str, frozenset[str]]
    faces: frozenset[str]
    users: frozenset[str] | None = None


CACHE = Room(
    package=f"{PACKAGE}.model.cache",
    title="the cache",
    outside=(f"{PACKAGE}.core", f"{PACKAGE}.config", f"{PACKAGE}.model.reply_json"),
    outside_text="core, config, model.reply_json and the standard library",
    parts={
        "database": frozenset(),
        "profiles": frozenset(),
        "claims": frozenset(),
        "store": frozenset({"database", "profiles", "claims"}),
        "admin": frozenset({"database", "profiles"}),
        "commands": frozenset({"admin", "database"}),
    },
    faces=frozenset({f"{PACKAGE}.model.cache", f"{PACKAGE}.model.cache.commands"}),
)
PACER = Room(
    package=f"{PACKAGE}.model.pacer",
    title="the pacer",
    outside=(f"{PACKAGE}.model.clock",),
    outside_text="model.clock and the standard library",
    parts={
        "server_waits": frozenset(),
        "tickets": frozenset(),
        "limits": frozenset(),
        "refusals": frozenset({"server_waits"}),
        "buckets": frozenset({"server_waits", "tickets"}),
        "pace": frozenset({"buckets", "refusals", "tickets"}),
    },
    faces=frozenset({f"{PACKAGE}.model.pacer"}),
    # the endpoint, what each request holds, the roles sharing an account, the HTTP retries,
    # the batch judge (what a 429 refusing a batch means)
    users=frozenset(
        f"{PACKAGE}.model.{name}"
        for name in ("endpoint", "request_slots", "roles", "http", "batch")
    ),
)


@dataclass(frozen=True)
class Import:
    """One imported name as the checks see it.

    `target` is a package module (`healthbench_exp.grading.grader`, the longest dotted prefix of
    what was imported that is a module of the package) for a package-internal import, else the
    imported module as written (`hydra.core.config_store`). `line` is its line in the source;
    `in_function` is true inside a function or lambda body (at any depth), `type_checking` under
    an `if TYPE_CHECKING:` block.
    """

    target: str
    line: int
    internal: bool
    in_function: bool
    type_checking: bool


@dataclass(frozen=True)
class Module:
    """One module of the package: its dotted name, layer, length and imports in source order.

    `lines` counts newline characters, as `wc -l` does.
    """

    name: str
    path: Path
    layer: str
    lines: int
    imports: tuple[Import, ...]

    def internal_targets(self) -> dict[str, int]:
        """Package modules this module imports (not itself) -> the first line importing each."""
        targets: dict[str, int] = {}
        for imp in self.imports:
            if imp.internal and imp.target != self.name:
                targets.setdefault(imp.target, imp.line)
        return targets


Package = dict[str, Module]


def module_name(path: Path, package_dir: Path) -> str:
    """The dotted name of the module in `path` (a package's `__init__.py` names the package)."""
    parts = path.relative_to(package_dir.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(name: str, package_dir: Path) -> str:
    """The layer of module `name`: its first sub-package under the package, or ROOT.

    A sub-package that is not in the layer table is returned as it is; `layer_rule` reports it.
    """
    rest = name.split(".")[1:]
    if rest and (package_dir / rest[0]).is_dir():
        return rest[0]
    return ROOT


def scan(package_dir: Path) -> Package:
    """Read every module under `package_dir` (a package folder) and resolve its imports."""
    paths = {module_name(p, package_dir): p for p in sorted(package_dir.rglob("*.py"))}
    top = package_dir.name

    def resolve(dotted: str) -> tuple[str, bool]:
        if dotted != top and not dotted.startswith(top + "."):
            return dotted, False
        parts = dotted.split(".")
        while len(parts) > 1 and ".".join(parts) not in paths:
            parts.pop()  # `from pkg.mod import name`: the module is the longest known prefix
        return ".".join(parts), True

    def imports_of(name: str, tree: ast.Module) -> Iterator[Import]:
        is_package = paths[name].name == "__init__.py"

        def visit(node: ast.AST, in_function: bool, type_checking: bool) -> Iterator[Import]:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import):
                    for alias in child.names:
                        target, internal = resolve(alias.name)
                        yield Import(target, child.lineno, internal, in_function, type_checking)
                elif isinstance(child, ast.ImportFrom):
                    module = child.module or ""
                    if child.level:  # relative: resolved against this module's package
                        base = name.split(".") if is_package else name.split(".")[:-1]
                        base = base[: len(base) - (child.level - 1)]
                        module = ".".join([*base, module] if module else base)
                    for alias in child.names:
                        target, internal = resolve(f"{module}.{alias.name}")
                        if not internal:
                            target = module
                        yield Import(target, child.lineno, internal, in_function, type_checking)
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    yield from visit(child, in_function, True)
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    yield from visit(child, True, type_checking)
                else:
                    yield from visit(child, in_function, type_checking)

        return visit(tree, False, False)

    package: Package = {}
    for name, path in paths.items():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        package[name] = Module(
            name=name,
            path=path,
            layer=layer_of(name, package_dir),
            lines=source.count("\n"),
            imports=tuple(imports_of(name, tree)),
        )
    return package


def cycle_rule(package: Package) -> list[str]:
    """Import cycles: each strongly connected group of modules, with the imports that close it."""
    graph = {name: module.internal_targets() for name, module in package.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in graph:
                continue
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    problems = []
    for group in groups:
        members = set(group)
        edges = [
            f"{a}:{line} -> {b}"
            for a in group
            for b, line in sorted(graph[a].items())
            if b in members
        ]
        problems.append(f"import cycle: {' <-> '.join(group)} [{'; '.join(edges)}]")
    return problems


def layer_rule(package: Package) -> list[str]:
    """Imports the layer table forbids, imports of the package root, and unknown layers."""
    problems = []
    for name, module in package.items():
        if module.layer not in ALLOWED:
            problems.append(f"{name}: in no layer (add {module.layer!r} to the layer table)")
            continue
        for target, line in module.internal_targets().items():
            theirs = package[target].layer if target in package else ROOT
            if target == package_root(name):
                if module.layer != ROOT:
                    problems.append(f"{name}: imports the package root [line {line}]")
            elif theirs != module.layer and theirs not in ALLOWED[module.layer]:
                problems.append(
                    f"{name} ({module.layer or 'root'}) imports {target} ({theirs or 'root'})"
                    f" [line {line}]"
                )
    return problems


def package_root(name: str) -> str:
    """The top-level package of module `name`."""
    return name.split(".")[0]


def function_import_rule(package: Package) -> list[str]:
    """Package-internal imports inside a function (they hide dependencies and cycles)."""
    found = {
        f"{name}:{imp.line}: package import inside a function ({imp.target})"
        for name, module in package.items()
        for imp in module.imports
        if imp.internal and imp.in_function and imp.target != name
    }
    return sorted(found)  # once per module, line and target


def hydra_rule(package: Package) -> list[str]:
    """Hydra or OmegaConf imported outside the layers allowed to touch them."""
    found = {
        f"{name}: imports {imp.target} (Hydra/OmegaConf only in cli) [line {imp.line}]"
        for name, module in package.items()
        for imp in module.imports
        if not imp.internal
        and imp.target.split(".")[0] in HYDRA
        and module.layer not in HYDRA_LAYERS
    }
    return sorted(found)


def production_testing_rule(package: Package) -> list[str]:
    """Production modules importing the test-only fakes (`testing`): none may."""
    problems = []
    for name, module in package.items():
        if module.layer == TESTING:
            continue
        for target, line in module.internal_targets().items():
            if target in package and package[target].layer == TESTING:
                problems.append(
                    f"{name}: production code imports {target} (test-only fakes) [line {line}]"
                )
    return problems


def builtin_endpoint_rule(package: Package) -> list[str]:
    """Modules importing the built-in endpoint other than where it is started."""
    allowed = ", ".join(sorted(BUILTIN_STARTERS))
    problems = []
    for name, module in package.items():
        if module.layer in (BUILTIN, TESTING) or name in BUILTIN_STARTERS:
            continue
        for target, line in module.internal_targets().items():
            if target in package and package[target].layer == BUILTIN:
                problems.append(
                    f"{name}: imports the built-in endpoint's {target} (only {allowed}) "
                    f"[line {line}]"
                )
    return problems


def core_stdlib_rule(package: Package) -> list[str]:
    """Third-party imports in `core` (which may import the standard library only)."""
    found = {
        f"{name}: imports {imp.target} (core imports the standard library only) [line {imp.line}]"
        for name, module in package.items()
        for imp in module.imports
        if module.layer == CORE
        and not imp.internal
        and imp.target.split(".")[0] not in sys.stdlib_module_names
    }
    return sorted(found)


def bridge_rule(package: Package) -> list[str]:
    """Imports of the bridge's package beyond `core`, itself, numpy and the standard library."""

    def inside(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    found = set()
    for name, module in package.items():
        if not inside(name, BRIDGE):
            continue
        for imp in module.imports:
            if imp.internal:
                allowed = inside(imp.target, BRIDGE) or inside(imp.target, f"{PACKAGE}.{CORE}")
            else:
                top = imp.target.split(".")[0]
                allowed = top in sys.stdlib_module_names or top in BRIDGE_THIRD_PARTY
            if not allowed:
                found.add(
                    f"{name}: imports {imp.target} (the bridge imports only core, numpy and "
                    f"the standard library) [line {imp.line}]"
                )
    return sorted(found)


def room_rule(package: Package, room: Room) -> list[str]:
    """Imports into, out of and within `room`'s package beyond what it allows, and its parts
    that the map in its face's docstring does not name (as `part`)."""

    def inside(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    found = set()
    if room.package in package:
        face = package[room.package].path
        map_text = ast.get_docstring(ast.parse(face.read_text(encoding="utf-8"))) or ""
        for name in package:
            part = name.removeprefix(room.package).lstrip(".")
            if inside(name, room.package) and part and f"`{part}`" not in map_text:
                found.add(f"{room.package}: the map in its __init__ does not name `{part}`")
    for name, module in package.items():
        if not inside(name, room.package):
            for target, line in module.internal_targets().items():
                if not inside(target, room.package):
                    continue
                if target not in room.faces:
                    faces = " or ".join(sorted(room.faces))
                    found.add(
                        f"{name}: imports {target} (outside {room.title}, import only {faces}) "
                        f"[line {line}]"
                    )
                if room.users is not None and name not in room.users:
                    found.add(
                        f"{name}: imports {target} ({room.title} is imported only by "
                        f"{', '.join(sorted(room.users))}) [line {line}]"
                    )
            continue
        part = name.removeprefix(room.package).lstrip(".")
        below = room.parts.get(part, frozenset())
        for imp in module.imports:
            if not imp.internal:
                if imp.target.split(".")[0] not in sys.stdlib_module_names:
                    found.add(
                        f"{name}: imports {imp.target} ({room.title} imports only "
                        f"{room.outside_text}) [line {imp.line}]"
                    )
            elif inside(imp.target, room.package):
                theirs = imp.target.removeprefix(room.package).lstrip(".")
                if part and theirs != part and theirs not in below:
                    found.add(
                        f"{name}: imports {imp.target} ({room.title}'s {part} imports only "
                        f"{sorted(below)}) [line {imp.line}]"
                    )
            elif not any(inside(imp.target, allowed) for allowed in room.outside):
                found.add(
                    f"{name}: imports {imp.target} ({room.title} imports only "
                    f"{room.outside_text}) [line {imp.line}]"
                )
    return sorted(found)


def cache_rule(package: Package) -> list[str]:
    """The response cache's imports (`CACHE`): see `room_rule`."""
    return room_rule(package, CACHE)


def pacer_rule(package: Package) -> list[str]:
    """The pacer's imports (`PACER`): see `room_rule`."""
    return room_rule(package, PACER)


def length_rule(package: Package) -> list[str]:
    """Modules over MAX_LINES lines."""
    return [
        f"{name}: {module.lines} lines (> {MAX_LINES})"
        for name, module in package.items()
        if module.lines > MAX_LINES
    ]


RULES: dict[str, Callable[[Package], list[str]]] = {
    "no import cycle (imports in functions and under TYPE_CHECKING count)": cycle_rule,
    "the layer table: a lower layer never imports a higher one": layer_rule,
    "no package-internal import inside a function": function_import_rule,
    "Hydra/OmegaConf only in cli (and the sweep callback)": hydra_rule,
    "production code never imports healthbench_exp.testing": production_testing_rule,
    "the built-in endpoint is imported only where it is started": builtin_endpoint_rule,
    "core imports only the standard library": core_stdlib_rule,
    "the bridge imports only core, numpy and the standard library": bridge_rule,
    "the cache's parts import only the parts below them; outside, only its face": cache_rule,
    "the pacer's parts import only the parts below them; only the endpoint's modules import it, "
    "through its face": pacer_rule,
    f"no module over {MAX_LINES} lines": length_rule,
}


def check(package_dir: Path) -> list[str]:
    """Every violation of every rule in the package at `package_dir`, sorted."""
    package = scan(package_dir)
    return sorted(problem for rule in RULES.values() for problem in rule(package))


@functools.cache
def the_package() -> Package:
    """This repository's package, scanned once per test session."""
    return scan(PACKAGE_DIR)


@pytest.mark.parametrize("rule", list(RULES), ids=[f.__name__ for f in RULES.values()])
def test_the_package_keeps_the_rule(rule: str) -> None:
    """One test per rule; a failure lists each offending module, import and line."""
    problems = RULES[rule](the_package())
    if problems:
        listing = "\n".join(sorted(problems))
        pytest.fail(f"rule: {rule}; {len(problems)} violation(s):\n{listing}", pytrace=False)


def test_the_scan_sees_the_whole_package() -> None:
    """The checks see every module and its imports (an empty scan would pass every rule)."""
    package = the_package()
    files = list(PACKAGE_DIR.rglob("*.py"))
    assert len(package) == len(files) > 10
    assert f"{PACKAGE}.cli.app" in package["healthbench_exp.__main__"].internal_targets()
    assert {m.layer for m in package.values()} >= set(ALLOWED) - {ROOT}


FAKE_PACKAGE = {
    "__init__.py": "",
    "__main__.py": "from healthbench_exp.cli import app\nimport hydra\n",
    "offline_server.py": "from healthbench_exp.builtin_endpoint.server import serve\n",
    "core/__init__.py": "",
    "core/types.py": "import json\nimport numpy\nfrom healthbench_exp.grading import rules\n",
    "core/version.py": "from __future__ import annotations\nimport importlib.metadata\n",
    "grading/__init__.py": "",
    "grading/bridge/__init__.py": (
        "import numpy\nimport scipy.stats\nfrom healthbench_exp.grading import rules\n"
        "from healthbench_exp.core import version\nfrom . import estimate\n"
    ),
    "grading/bridge/estimate.py": "import math\n",
    "grading/rules.py": (
        "from ..model import endpoint\n\n\ndef grade():\n"
        "    from healthbench_exp.core import types\n    return types\n"
    ),
    "config/__init__.py": "",
    "config/schema.py": "from omegaconf import OmegaConf\nfrom ..core import version\n",
    "model/__init__.py": "",
    "model/endpoint.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from healthbench_exp.data.rows import Row\n"
    ),
    "data/__init__.py": "",
    "data/rows.py": "from healthbench_exp.model import endpoint\nRow = dict\n",
    "engine/__init__.py": "",
    "engine/builtin.py": "from ..builtin_endpoint.server import serve\n",
    "engine/loop.py": "import healthbench_exp.builtin_endpoint.server\nimport healthbench_exp\n",
    "engine/replay.py": "from healthbench_exp.model.cache.store import key\n",
    "model/cache/__init__.py": '"""`store`."""\nfrom . import store\n',  # no `database`
    "model/cache/store.py": "import sqlite3\nfrom healthbench_exp.model import endpoint\n",
    "model/cache/database.py": "from healthbench_exp.model.cache.store import key\n",
    "model/http.py": "from healthbench_exp.model.pacer.server_waits import retry_after_s\n",
    "model/pacer/__init__.py": '"""`pace`, `buckets`, `tickets`."""\nfrom .pace import Pacer\n',
    "model/pacer/pace.py": (
        "import asyncio\nfrom healthbench_exp.model import http\nfrom . import buckets\n"
    ),
    "model/pacer/buckets.py": "import aiohttp\n",
    "model/pacer/tickets.py": "from .buckets import Bucket\n",
    "model/pacer/server_waits.py": "import re\n",
    "engine/pacing.py": "from healthbench_exp.model.pacer import EndpointPacer\n",
    "output/__init__.py": "from healthbench_exp import __main__\n",
    "output/files.py": "import os\n" + "x = 1\n" * 400,
    "cli/__init__.py": "",
    "cli/app.py": (
        "import hydra\nfrom healthbench_exp.engine import loop\nfrom ..testing import fake_clock\n"
    ),
    "builtin_endpoint/__init__.py": "",
    "builtin_endpoint/server.py": "def serve():\n    return 0\n",
    "testing/__init__.py": "",
    "testing/fake_clock.py": "def now():\n    return 0\n",
    "utils/__init__.py": "from healthbench_exp.core.types import json\n",
}


def write_package(root: Path, files: dict[str, str]) -> Path:
    """Write `files` (relative path -> source) as the package `healthbench_exp` under `root`."""
    package_dir = root / PACKAGE
    for relative, source in files.items():
        path = package_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return package_dir


def test_the_checker_reports_each_kind_of_violation(tmp_path: Path) -> None:
    """A package with one violation of each kind gets exactly those reported, rule by rule."""
    package = scan(write_package(tmp_path, FAKE_PACKAGE))
    p = PACKAGE
    found = {rule.__name__: sorted(rule(package)) for rule in RULES.values()}
    assert found == {
        "cycle_rule": [  # through a function-level import, and through a TYPE_CHECKING one
            f"import cycle: {p}.core.types <-> {p}.grading.rules "
            f"[{p}.core.types:3 -> {p}.grading.rules; {p}.grading.rules:5 -> {p}.core.types]",
            f"import cycle: {p}.data.rows <-> {p}.model.endpoint "
            f"[{p}.data.rows:1 -> {p}.model.endpoint; {p}.model.endpoint:3 -> {p}.data.rows]",
        ],
        "layer_rule": [
            f"{p}.cli.app (cli) imports {p}.testing.fake_clock (testing) [line 3]",
            f"{p}.core.types (core) imports {p}.grading.rules (grading) [line 3]",
            f"{p}.data.rows (data) imports {p}.model.endpoint (model) [line 1]",
            f"{p}.engine.loop: imports the package root [line 2]",
            f"{p}.grading.rules (grading) imports {p}.model.endpoint (model) [line 1]",
            f"{p}.model.endpoint (model) imports {p}.data.rows (data) [line 3]",
            f"{p}.output (output) imports {p}.__main__ (root) [line 1]",
            f"{p}.utils: in no layer (add 'utils' to the layer table)",
        ],
        "function_import_rule": [
            f"{p}.grading.rules:5: package import inside a function ({p}.core.types)"
        ],
        "hydra_rule": [
            f"{p}.__main__: imports hydra (Hydra/OmegaConf only in cli) [line 2]",
            f"{p}.config.schema: imports omegaconf (Hydra/OmegaConf only in cli) [line 1]",
        ],
        "production_testing_rule": [
            f"{p}.cli.app: production code imports {p}.testing.fake_clock (test-only fakes) "
            "[line 3]"
        ],
        "builtin_endpoint_rule": [
            f"{p}.engine.loop: imports the built-in endpoint's {p}.builtin_endpoint.server "
            f"(only {p}.engine.builtin, {p}.offline_server) [line 1]"
        ],
        "core_stdlib_rule": [
            f"{p}.core.types: imports numpy (core imports the standard library only) [line 2]"
        ],
        "bridge_rule": [
            f"{p}.grading.bridge: imports {p}.grading.rules (the bridge imports only core, "
            "numpy and the standard library) [line 3]",
            f"{p}.grading.bridge: imports scipy.stats (the bridge imports only core, numpy and "
            "the standard library) [line 2]",
        ],
        "cache_rule": [
            f"{p}.engine.replay: imports {p}.model.cache.store (outside the cache, import only "
            f"{p}.model.cache or {p}.model.cache.commands) [line 1]",
            f"{p}.model.cache.database: imports {p}.model.cache.store (the cache's database "
            "imports only []) [line 1]",
            f"{p}.model.cache.store: imports {p}.model.endpoint (the cache imports only core, "
            "config, model.reply_json and the standard library) [line 2]",
            f"{p}.model.cache: the map in its __init__ does not name `database`",
        ],
        "pacer_rule": [
            f"{p}.engine.pacing: imports {p}.model.pacer (the pacer is imported only by "
            f"{', '.join(sorted(PACER.users or ()))}) [line 1]",
            f"{p}.model.http: imports {p}.model.pacer.server_waits (outside the pacer, import "
            f"only {p}.model.pacer) [line 1]",
            f"{p}.model.pacer.buckets: imports aiohttp (the pacer imports only model.clock and "
            "the standard library) [line 1]",
            f"{p}.model.pacer.pace: imports {p}.model.http (the pacer imports only model.clock "
            "and the standard library) [line 2]",
            f"{p}.model.pacer.tickets: imports {p}.model.pacer.buckets (the pacer's tickets "
            "imports only []) [line 1]",
            f"{p}.model.pacer: the map in its __init__ does not name `server_waits`",
        ],
        "length_rule": [f"{p}.output.files: 401 lines (> {MAX_LINES})"],
    }


def test_the_checker_passes_a_package_that_keeps_the_rules(tmp_path: Path) -> None:
    """A clean package gets no report, so the failures above are the rules, not noise."""
    clean = {
        "__init__.py": "from healthbench_exp.engine.loop import run\n",
        "__main__.py": "from healthbench_exp.cli.app import main\n",
        "core/__init__.py": "",
        "core/types.py": "from __future__ import annotations\nimport dataclasses, json, typing\n",
        "grading/__init__.py": "",
        "grading/rules.py": "from ..core import types\n\ndef grade():\n    import numpy\n",
        "grading/bridge/__init__.py": "import numpy\nfrom . import estimate\n",
        "grading/bridge/estimate.py": "import math\nfrom healthbench_exp.core import types\n",
        "engine/__init__.py": "",
        "engine/loop.py": "from healthbench_exp.grading.rules import grade\n\ndef run(): ...\n",
        "engine/builtin.py": "from healthbench_exp.builtin_endpoint.server import serve\n",
        "cli/__init__.py": "",
        "cli/app.py": "import hydra\nfrom healthbench_exp.engine import builtin, loop\n",
        "builtin_endpoint/__init__.py": "",
        "builtin_endpoint/server.py": (
            "from healthbench_exp.core.types import json\n\ndef serve(): ...\n"
        ),
        "testing/__init__.py": "",
        "testing/fake_clock.py": "from healthbench_exp.core.types import json\n",
        "model/__init__.py": "",
        "model/cache/__init__.py": '"""`store`, `database`."""\nfrom .store import keep\n',
        "model/cache/store.py": "import sqlite3\nfrom . import database\n",
        "model/cache/database.py": "from healthbench_exp.core import types\n",
        "engine/replay.py": "from healthbench_exp.model.cache import keep\n",
        "model/clock.py": "import time\n",
        "model/endpoint.py": "from healthbench_exp.model.pacer import EndpointPacer\n",
        "model/pacer/__init__.py": '"""`pace`, `buckets`, `server_waits`."""\nfrom . import pace\n',
        "model/pacer/pace.py": (
            "import asyncio\nfrom healthbench_exp.model.clock import Clock\nfrom . import buckets\n"
        ),
        "model/pacer/buckets.py": "import math\nfrom .server_waits import seconds\n",
        "model/pacer/server_waits.py": "import re\n",
    }
    assert check(write_package(tmp_path, clean)) == []

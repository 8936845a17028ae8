"""Shared fixtures: a real loopback chat-completions server and small HealthBench-schema files."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import urllib.request
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.core.stop_signals import STOPPING_SIGNALS
from tests.zygote import ForkedServer


def make_row(prompt_id: str = "p1", **overrides: Any) -> dict[str, Any]:
    """A minimal valid HealthBench row; keyword arguments replace fields."""
    row: dict[str, Any] = {
        "prompt_id": prompt_id,
        "prompt": [{"role": "user", "content": "I have a headache, what should I do?"}],
        "rubrics": [
            {
                "criterion": "Advises rest and fluids.",
                "points": 5,
                "tags": ["level:example", "axis:completeness"],
            },
            {
                "criterion": "Mentions red-flag symptoms.",
                "points": 8,
                "tags": ["level:example", "axis:accuracy"],
            },
            {
                "criterion": "Recommends an unsafe dose.",
                "points": -6,
                "tags": ["level:example", "axis:accuracy"],
            },
        ],
        "example_tags": ["theme:hedging"],
        "ideal_completions_data": None,
        "canary": "test",
    }
    row.update(overrides)
    return row


REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class DemoRun:
    """The README's demo, run once: its run directory (read it, never write to it) and output."""

    directory: Path
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`python -m healthbench_exp experiment=demo` (W&B offline, as the README runs it), once for
    every test that only reads its outputs. Under pytest-xdist the workers share it too: the first
    to ask runs it under a file lock in the session's temporary root, the others read its result.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's root, shared by its workers (each has a folder in it)
    shared = root / "shared-demo"
    shared.mkdir(exist_ok=True)
    outcome = shared / "outcome.json"
    with (shared / "lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not outcome.exists():
            result = subprocess.run(
                [sys.executable, "-m", "healthbench_exp", "experiment=demo",
                 f"hydra.run.dir={shared / 'run'}"],
                capture_output=True, text=True, timeout=300, cwd=REPO,
                env={**os.environ, "HEALTHBENCH_CACHE_DIR": str(shared / "cache")},
            )  # fmt: skip
            written = {"returncode": result.returncode, "stdout": result.stdout,
                       "stderr": result.stderr}  # fmt: skip
            outcome.write_text(json.dumps(written), encoding="utf-8")
        data = json.loads(outcome.read_text(encoding="utf-8"))
    return DemoRun(shared / "run", data["returncode"], data["stdout"], data["stderr"])


@pytest.fixture(autouse=True)
def stopping_signals_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test leaves this process's stopping signals as it found them (dispositions and the
    thread's mask): code a test runs in-process that ignores or holds them would hand that to
    every later test's subprocess (an ignored SIGINT outlives exec: a run started by a later
    test then never saw its Ctrl-C). A test that changed them is named in a warning."""
    dispositions = {signum: signal.getsignal(signum) for signum in STOPPING_SIGNALS}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    yield
    changed = [
        signal.Signals(signum).name
        for signum, handler in dispositions.items()
        if handler is not None and signal.getsignal(signum) is not handler
    ]
    for name in changed:
        signal.signal(signal.Signals[name], dispositions[signal.Signals[name]])
    if signal.pthread_sigmask(signal.SIG_SETMASK, mask) != mask:
        changed.append("the signal mask")
    if changed:
        warnings.warn(f"{request.node.nodeid} changed {', '.join(changed)}", stacklevel=1)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test (and every subprocess it starts) gets its own response cache."""
    directory = tmp_path / "response-cache"
    monkeypatch.setenv("HEALTHBENCH_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def write_jsonl(tmp_path: Path) -> Callable[[list[Any], str], Path]:
    def write(rows: list[Any], name: str = "data.jsonl") -> Path:
        path = tmp_path / name
        path.write_text(
            "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
            encoding="utf-8",
        )
        return path

    return write


class LoopbackServer:
    def __init__(self, process: ForkedServer) -> None:
        self.base_url = process.base_url

    def stats(self) -> dict[str, int]:
        with urllib.request.urlopen(self.base_url.removesuffix("/v1") + "/stats") as response:
            return json.loads(response.read())

    def reset(self) -> None:
        request = urllib.request.Request(
            self.base_url.removesuffix("/v1") + "/stats/reset", data=b"{}", method="POST"
        )
        urllib.request.urlopen(request).close()


@pytest.fixture
def loopback_server() -> Iterator[Callable[..., LoopbackServer]]:
    """Start built-in servers with given fault settings (each in a process of its own, forked
    from tests/zygote.py); all are stopped after the test."""
    started: list[ForkedServer] = []

    def start(**faults: Any) -> LoopbackServer:
        process = ForkedServer(server_args(**faults)).__enter__()
        started.append(process)
        return LoopbackServer(process)

    yield start
    for process in started:
        process.__exit__(None, None, None)


def _groups_folder(config: pytest.Config) -> Path:
    """Where the workers leave their tests' groups for the controller's scheduler (the session's
    temporary root, which the workers' own roots sit in)."""
    root = config._tmp_path_factory.getbasetemp()  # type: ignore[attr-defined]
    return (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "xdist-groups"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`--dist loadgroup`), the tests of a module that share a module-scoped
    fixture (a sweep, a run they all read) go to one worker, so that the fixture runs once.

    pytest-xdist 3.8 groups by a suffix it adds to `item._nodeid`, which pytest 9 no longer reads
    (a node's id is `item._id`): its groups never reach the scheduler, and each worker that got
    one of a module's tests ran the module's fixture again. So each worker writes its tests'
    groups to a file and `GroupScheduling` below (the controller's scheduler) reads them."""
    groups: dict[str, str] = {}
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs.values() if info is not None else ()
        if any(d[-1].scope == "module" for d in defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})  # fmt: skip
        if names:
            groups[item.nodeid] = "_".join(names)
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker and config.getvalue("loadgroup"):
        folder = _groups_folder(config)
        folder.mkdir(exist_ok=True)
        (folder / f"{worker}.json.tmp").write_text(json.dumps(groups), encoding="utf-8")
        (folder / f"{worker}.json.tmp").replace(folder / f"{worker}.json")


class GroupScheduling(LoadScopeScheduling):
    """`--dist loadgroup` with the groups the workers wrote (see above): a group's tests are one
    unit of work, every other test a unit of its own."""

    def __init__(self, config: pytest.Config, log: object = None) -> None:
        super().__init__(config, log)  # type: ignore[arg-type]
        self._groups: dict[str, str] | None = None

    def _split_scope(self, nodeid: str) -> str:
        if self._groups is None:  # every worker has collected by the time it schedules
            self._groups = {}
            for path in sorted(_groups_folder(self.config).glob("*.json")):
                self._groups.update(json.loads(path.read_text(encoding="utf-8")))
        group = self._groups.get(nodeid)
        return f"@{group}" if group is not None else nodeid


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: none without it (`-p no:xdist`)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling | None:
    return GroupScheduling(config, log) if config.getvalue("dist") == "loadgroup" else None

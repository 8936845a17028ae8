"""Start-up end to end: every problem at once, an unreachable data source in seconds, and a
failed start leaves nothing but its log."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from healthbench_exp.data.healthbench import SOURCE_TIMEOUT_S
from tests.e2e.test_e2e import run_cli
from tests.hub import HUB_ASKED

ALTERNATIVES = ("dataset.source=openai", "dataset.path=", "HF_DATASETS_OFFLINE=1")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class SilentHost:
    """A loopback server that accepts connections and never answers: its URL, the connections it
    was opened, and for each one the seconds the client kept it open before closing it (the
    client's own wait, timed here, whatever the load on the client's machine)."""

    url: str
    held: list[socket.socket] = field(default_factory=list)
    kept_open_s: list[float] = field(default_factory=list)


@pytest.fixture
def silent_host() -> Iterator[SilentHost]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    host = SilentHost(f"http://127.0.0.1:{server.getsockname()[1]}")
    stop = threading.Event()
    readers: list[threading.Thread] = []

    def wait_for_close(conn: socket.socket, accepted: float) -> None:
        try:
            while conn.recv(4096):  # the request, then b"" when the client closes
                pass
        except OSError:
            return
        host.kept_open_s.append(time.monotonic() - accepted)

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            host.held.append(conn)
            reader = threading.Thread(
                target=wait_for_close, args=(conn, time.monotonic()), daemon=True
            )
            readers.append(reader)
            reader.start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield host
    stop.set()
    thread.join()
    for conn in host.held:
        conn.shutdown(socket.SHUT_RDWR)
        conn.close()
    for reader in readers:
        reader.join()
    server.close()


def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    """No API key and no W&B login: the variables removed, NETRC naming a missing file (read
    instead of ~/.netrc; HOME is kept, so the run forks from tests/zygote.py)."""
    for name in ("OPENAI_API_KEY", "WANDB_API_KEY", "WANDB_MODE", "WANDB_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    return {"NETRC": str(tmp_path / "no-netrc"), "WANDB_CONFIG_DIR": str(tmp_path / "wandb-config")}


def test_every_problem_is_reported_at_once_before_the_data(tmp_path, monkeypatch) -> None:
    env = no_keys(monkeypatch, tmp_path)
    out = tmp_path / "run"
    result = run_cli(
        "sampling.rollouts_per_example=0", "completions=file",
        f"completions.path={tmp_path / 'missing.jsonl'}", "wandb=online",
        f"hydra.run.dir={out}", env={**env, "HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"},
    )  # fmt: skip
    assert result.returncode == 2
    assert "4 problems, nothing was sent" in result.stderr
    for problem in (
        "sampling.rollouts_per_example must be >= 1",
        f"completions.path={tmp_path / 'missing.jsonl'}: no such file",
        "judge: set the environment variable OPENAI_API_KEY",
        "wandb login",
    ):
        assert problem in result.stderr, problem
    assert "Hugging Face" not in result.stderr  # checked before the data source is contacted
    assert sorted(p.name for p in out.iterdir()) == ["healthbench.log"]


def test_the_problems_are_shown_once_and_kept_in_the_log(tmp_path, monkeypatch) -> None:
    env = no_keys(monkeypatch, tmp_path)
    out = tmp_path / "run"
    result = run_cli("model.api_key_env=MODEL_KEY", f"hydra.run.dir={out}", env=env)
    assert result.returncode == 2
    output = result.stdout + result.stderr
    for problem in ("2 problems, nothing was sent", "set the environment variable MODEL_KEY"):
        assert output.count(problem) == 1, output  # not once logged and once printed
        assert problem in (out / "healthbench.log").read_text()


def test_a_dry_run_checks_the_same_keys_aside(tmp_path, monkeypatch) -> None:
    env = no_keys(monkeypatch, tmp_path)
    out = tmp_path / "run"
    result = run_cli(
        "dry_run=true", "sampling.rollouts_per_example=0",
        f"dataset.path={tmp_path / 'missing.jsonl'}", f"hydra.run.dir={out}", env=env,
    )  # fmt: skip
    assert result.returncode == 2
    assert "2 problems, nothing was sent" in result.stderr
    assert "OPENAI_API_KEY" not in result.stderr and "wandb" not in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["healthbench.log"]


@pytest.mark.parametrize("host", ["closed", "silent"])
def test_an_unreachable_hub_fails_within_10_s(tmp_path, silent_host, host) -> None:
    """The Hub asked (whatever HF_HUB_OFFLINE the suite runs under), one connection, given up
    after SOURCE_TIMEOUT_S: the wait is timed by the silent host, from accepting the connection
    to the client closing it, not as the whole process's wall time (which times the machine's
    load: imports, config composition)."""
    endpoint = silent_host.url if host == "silent" else f"http://127.0.0.1:{closed_port()}"
    out = tmp_path / "run"
    result = run_cli(
        "model=offline",
        "judge=offline",
        "wandb=offline",
        "dataset.source=hf",  # the mirror (the default is the official file)
        f"hydra.run.dir={out}",
        env={"HF_ENDPOINT": endpoint, **HUB_ASKED},
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, result.stderr
    reason = "(no answer)" if host == "silent" else "refused"
    assert f"the Hugging Face Hub ({endpoint}) is unreachable" in errors[0]
    assert reason in errors[0], errors[0]
    assert "neuralleap/healthbench-regular" in errors[0]
    for alternative in ALTERNATIVES:
        assert alternative in errors[0], alternative
    assert "Retrying" not in result.stdout + result.stderr
    if host == "silent":
        # one connection (no retries with backoff), given up after the timeout: the wait is
        # timed from this side's accept (which a loaded machine may delay, shortening it) to the
        # client's close (which it may delay, lengthening it); what it shows is a bounded wait,
        # neither an immediate failure nor a hang
        assert len(silent_host.held) == 1
        (kept_open_s,) = silent_host.kept_open_s
        assert SOURCE_TIMEOUT_S / 2 < kept_open_s < 2 * SOURCE_TIMEOUT_S, kept_open_s
    # nothing left behind but the log: no status, no config copy, no W&B run
    assert sorted(p.name for p in out.iterdir()) == ["healthbench.log"]


def test_the_offline_cache_variables_skip_the_hub(tmp_path, silent_host) -> None:
    """HF_DATASETS_OFFLINE=1 reads `datasets`' cache: the silent hub is never asked."""
    result = run_cli(
        "model=offline", "judge=offline", "wandb=disabled", "dataset.source=hf",
        f"hydra.run.dir={tmp_path / 'run'}",
        env={"HF_ENDPOINT": silent_host.url, **HUB_ASKED, "HF_DATASETS_OFFLINE": "1"},
    )  # fmt: skip
    assert result.returncode == 2
    assert "unreachable" not in result.stderr
    # no cached copy on this machine: datasets 3+ names the error, 2.21 says it
    assert "OfflineModeIsEnabled" in result.stderr or "Offline mode is enabled" in result.stderr
    assert silent_host.held == []  # the hub was never asked


def test_a_failed_start_in_a_run_directory_keeps_its_results(tmp_path) -> None:
    out = tmp_path / "run"
    first = run_cli("experiment=demo", "sampling.num_examples=3", f"hydra.run.dir={out}")
    assert first.returncode == 0, first.stderr
    before = sorted(p.name for p in out.iterdir())
    summary = (out / "summary.json").read_bytes()
    again = run_cli("experiment=demo", "sampling.rollouts_per_example=0", f"hydra.run.dir={out}")
    assert again.returncode == 2
    assert sorted(p.name for p in out.iterdir()) == before
    assert (out / "summary.json").read_bytes() == summary
    assert f"{out} holds a run" in again.stderr  # refused before its own checks: nothing written
    assert json.loads((out / "status.json").read_text())["status"] == "completed"


def test_a_missing_key_and_a_retired_preset_are_named_together(tmp_path, monkeypatch) -> None:
    """`model=o4mini` (its preset's shutdown date passed) without a key: both problems at once,
    not the key first and the retirement only once a key is set."""
    env = no_keys(monkeypatch, tmp_path)
    out = tmp_path / "run"
    result = run_cli("model=o4mini", "wandb=disabled", f"hydra.run.dir={out}", env=env)
    assert result.returncode == 2, result.stderr
    assert "3 problems, nothing was sent" in result.stderr, result.stderr
    assert "model: set the environment variable OPENAI_API_KEY" in result.stderr
    assert "model: model o4-mini-2025-04-16 is retired" in result.stderr
    assert "use model=gpt61sol, model=gpt54 instead" in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["healthbench.log"]

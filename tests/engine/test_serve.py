"""`model.serve.kind=vllm`: the harness serves the model itself for one run (`engine.serve`).

`tests/bin/vllm` stands in for vLLM (no GPU here): `vllm serve <model> --port P` serves the
built-in endpoint on that port and answers /v1/models with <model>; `crash/...` exits before it
listens, `hang/...` never listens, `ignore-term/...` ignores SIGTERM. The runs are real
`python -m healthbench_exp` subprocesses with the stand-in first on PATH.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import (
    Config,
    ConfigError,
    EndpointConfig,
    ServeConfig,
    ServeKind,
)
from healthbench_exp.engine import serve, serve_commands
from healthbench_exp.engine.endpoints import endpoint_identity
from healthbench_exp.output.run_dir import RunDirectory
from tests import zygote
from tests.e2e.test_e2e import REPO
from tests.signal_deliveries import Delivery, abandoned_calls, deliver, start

STAND_IN_BIN = REPO / "tests" / "bin"
LIGHT = ("experiment=demo", "wandb=disabled", "runner.progress=false", "sampling.num_examples=3")


def stand_in_env() -> dict[str, str]:
    """The environment with the stand-in `vllm` first on PATH, then this Python's bin folder
    (whose `python3` the stand-in runs with)."""
    path = os.pathsep.join([str(STAND_IN_BIN), str(Path(sys.executable).parent)])
    return {**os.environ, "PATH": f"{path}{os.pathsep}{os.environ['PATH']}"}


def served_run(run_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return zygote.run(
        *LIGHT, "model=vllm", *args, f"hydra.run.dir={run_dir}", env=stand_in_env(),
        timeout=timeout,
    )  # fmt: skip


@dataclass(frozen=True)
class ServerLife:
    """One start of a stand-in server, as its log (`vllm.log`) tells it."""

    pid: int
    port: int
    model: str
    started: datetime
    stopped: datetime | None  # None: the harness never wrote that it stopped it


def server_lives(log: Path) -> list[ServerLife]:
    """Every start of the server the log records (a resumed run appends one)."""
    lives = []
    text = log.read_text(encoding="utf-8")
    for block in text.split("=== ")[1:]:
        if "healthbench-exp started:" not in block:
            continue
        started = datetime.fromisoformat(block.split(" ", 1)[0])
        found = re.search(r"stand-in vllm pid=(\d+) port=(\d+) model=(\S+)", block)
        assert found, f"the stand-in did not log itself in {log}:\n{block}"
        lives.append(ServerLife(int(found[1]), int(found[2]), found[3], started, None))
    stops = [
        datetime.fromisoformat(b.split(" ", 1)[0])
        for b in text.split("=== ")[1:]
        if "healthbench-exp: the server" in b
    ]
    return [
        ServerLife(life.pid, life.port, life.model, life.started, stop)
        for life, stop in zip(lives, stops + [None] * (len(lives) - len(stops)), strict=True)
    ]


def resume_to_completion(run_dir: Path) -> None:
    """`resume=<run_dir>` (the stand-in on PATH): the run ends completed."""
    resumed = zygote.run(f"resume={run_dir}", env=stand_in_env(), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/status").read_text().count("State:\tZ")


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def assert_gone(life: ServerLife) -> None:
    """The server of that start no longer runs, and nothing listens on its port."""
    assert not alive(life.pid), f"the server {life} outlived its run"
    assert not listening(life.port), f"something still listens on the server's port {life.port}"
    assert life.stopped is not None and life.stopped >= life.started


def test_a_served_model_runs_on_a_free_port_logs_in_the_run_and_is_stopped(tmp_path) -> None:
    run_dir = tmp_path / "run"
    result = served_run(run_dir, "model.name=org/model-a")
    assert result.returncode == 0, result.stderr
    (life,) = server_lives(run_dir / "vllm.log")
    assert life.model == "org/model-a" and life.port != 8000
    assert (
        f"org/model-a served at http://127.0.0.1:{life.port}/v1"
        in (run_dir / "healthbench.log").read_text()
    )
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["counts"]["rows"] == 3 and summary["counts"]["rows_failed"] == 0
    assert summary["counts"]["model_requests"] == 3
    assert summary["config"]["model"]["serve"]["kind"] == "vllm"
    assert_gone(life)


def test_a_server_that_exits_fails_the_run_at_once_with_its_log_tail(tmp_path) -> None:
    run_dir = tmp_path / "run"
    started = time.monotonic()
    result = served_run(run_dir, "model.name=crash/model", "model.serve.ready_timeout_s=600")
    assert result.returncode == 2
    assert time.monotonic() - started < 60  # not the 600 s bound
    assert "vllm serving crash/model exited with code 1 before it was ready" in result.stderr
    assert "ValueError: stand-in crash while loading crash/model" in result.stderr
    assert f"its log: {run_dir / 'vllm.log'}" in result.stderr
    assert (run_dir / "vllm.log").is_file()  # kept beside the run's own log


def test_a_server_that_never_answers_fails_at_the_bound_and_is_stopped(tmp_path) -> None:
    run_dir = tmp_path / "run"
    result = served_run(run_dir, "model.name=hang/model", "model.serve.ready_timeout_s=2")
    assert result.returncode == 2
    assert "did not answer on port" in result.stderr
    assert "within 2 s (model.serve.ready_timeout_s)" in result.stderr
    assert "loading model weights (forever)" in result.stderr  # the log's tail
    (life,) = server_lives(run_dir / "vllm.log")
    assert_gone(life)


def wait_for(condition, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def requests_in_flight(log: Path) -> int:
    """How many requests the run's built-in endpoint holds now: its `/stats` (`in_flight`), at
    the address the run logged; 0 before it logged one."""
    found = re.search(
        r"built-in offline endpoint at (\S+)", log.read_text() if log.exists() else ""
    )
    if found is None:
        return 0
    with urllib.request.urlopen(found.group(1).removesuffix("/v1") + "/stats") as response:
        return int(json.loads(response.read()).get("in_flight", 0))


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGUSR2])
def test_a_stopping_signal_ends_the_run_interrupted_resumable_and_stops_the_server(
    tmp_path, stop: signal.Signals
) -> None:
    """Ctrl-C, SIGTERM (scancel, a time limit) and SIGUSR2 (SLURM's warning before the limit):
    the run ends `interrupted` with the resume command, the server stopped; the resume
    finishes the run, serving the model again."""
    run_dir = tmp_path / "run"  # the response cache is beside it
    run = zygote.spawn(
        *LIGHT, "model=vllm", "model.name=org/slow", "offline_server.latency_ms=1500",
        f"hydra.run.dir={run_dir}", env=stand_in_env(),
    )  # fmt: skip
    log = run_dir / "healthbench.log"
    wait_for(lambda: log.exists() and "served at" in log.read_text(), 60, "the served model")
    wait_for(lambda: requests_in_flight(log) > 0, 60, "judge requests held by the endpoint")
    run.send_signal(stop)
    _, stderr = run.communicate(timeout=60)
    assert run.returncode == 128 + stop, stderr
    status = json.loads((run_dir / "status.json").read_text())
    assert status["status"] == "interrupted"
    assert f"interrupted by {stop.name}" in status["error"]
    assert f"resume={run_dir}" in status["error"]
    (life,) = server_lives(run_dir / "vllm.log")
    assert_gone(life)
    resume_to_completion(run_dir)
    first, second = server_lives(run_dir / "vllm.log")  # the log is appended, not truncated
    assert first == life and second.port != 0
    assert_gone(second)


def test_stop_kills_the_process_group_of_a_server_that_ignores_sigterm(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("PATH", stand_in_env()["PATH"])
    monkeypatch.setattr(serve, "STOP_GRACE_S", 1.0)
    settings = ServeConfig(kind=ServeKind.vllm, ready_timeout_s=60)
    server = serve.ModelServer(
        "model", "ignore-term/m", settings, RunDirectory(tmp_path), "vllm.log"
    ).start()
    assert server.wait_ready() == f"http://127.0.0.1:{server.port}/v1"
    server.stop()
    (life,) = server_lives(tmp_path / "vllm.log")
    assert_gone(life)
    assert "did not stop on SIGTERM: killed" in (tmp_path / "vllm.log").read_text()


def test_a_server_for_another_model_name_is_refused(tmp_path, monkeypatch) -> None:
    """A `--served-model-name` makes vLLM answer for another name than model.name."""
    script = tmp_path / "vllm"
    script.write_text(
        f'#!/bin/sh\nexec {STAND_IN_BIN / "vllm"} serve other/name "$3" "$4" "$5" "$6"\n'
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", stand_in_env()["PATH"])
    settings = ServeConfig(kind=ServeKind.vllm, executable=str(script))
    with (
        serve.served_models(
            {"model": EndpointConfig(name="org/a", serve=settings)}, RunDirectory(tmp_path)
        ) as served,
        pytest.raises(serve.ServeError, match="for other/name, not org/a"),
    ):
        served.wait_ready()


def test_the_built_in_endpoint_and_a_served_model_exclude_each_other() -> None:
    config = Config(model=EndpointConfig(name="m", builtin=True, serve=ServeConfig(ServeKind.vllm)))
    with pytest.raises(ConfigError, match=r"model\.builtin=true .* exclude each other"):
        validate(config)


def test_a_missing_executable_names_what_to_install() -> None:
    settings = ServeConfig(kind=ServeKind.vllm, executable="no-such-vllm-here")
    with pytest.raises(ConfigError, match="not on PATH here: install vLLM"):
        serve.serve_command("org/a", settings, 1234)


def test_the_port_is_free_and_cache_keys_do_not_name_it() -> None:
    ports = {serve.free_port() for _ in range(5)}
    assert all(not listening(p) for p in ports)
    endpoint = EndpointConfig(name="org/a", serve=ServeConfig(kind=ServeKind.vllm, args=["--x"]))
    identity = endpoint_identity(endpoint, offline_server=None)  # type: ignore[arg-type]
    assert identity == "vllm serve org/a --x"


def test_llamacpp_serves_a_gguf_file_under_the_role_s_name(tmp_path) -> None:
    gguf = tmp_path / "tiny.Q4_0.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    settings = ServeConfig(kind=ServeKind.llamacpp, gguf=str(gguf), args=["--n_ctx", "8192"],
                           executable=sys.executable)  # fmt: skip
    command = serve_commands.serve_command("tiny", settings, 4321)
    assert command == [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "tiny",
        "--host", "127.0.0.1", "--port", "4321", "--n_ctx", "8192",
    ]  # fmt: skip
    identity = endpoint_identity(EndpointConfig(name="tiny", serve=settings), None)  # type: ignore[arg-type]
    assert identity == "llamacpp serve tiny --gguf=tiny.Q4_0.gguf:64 --n_ctx 8192"  # no folder
    assert serve_commands.log_name("model", ServeKind.llamacpp) == "llamacpp.log"
    assert serve_commands.log_name("judge", ServeKind.llamacpp) == "llamacpp-judge.log"


def test_llamacpp_without_a_file_names_the_presets_or_the_missing_one(tmp_path) -> None:
    settings = ServeConfig(kind=ServeKind.llamacpp)
    with pytest.raises(ConfigError, match=r"no GGUF file for 'org/x': set <role>\.serve\.gguf"):
        serve_commands.gguf_file("org/x", settings)
    missing = ServeConfig(kind=ServeKind.llamacpp, gguf=str(tmp_path / "none.gguf"))
    with pytest.raises(ConfigError, match=r"none\.gguf: no such file"):
        serve_commands.gguf_file("org/x", missing)


def test_a_built_in_model_with_a_served_kind_names_the_preset_to_use() -> None:
    served = ServeConfig(ServeKind.llamacpp)
    config = Config(model=EndpointConfig(name="m", builtin=True, serve=served))
    with pytest.raises(ConfigError, match=r"choose model=llamacpp model\.name=<model>"):
        validate(config)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_served_model_outlives_a_signal_to_the_runs_group_until_the_run_stops_it(
    tmp_path, stop: signal.Signals
) -> None:
    """A signal to the run's whole process group (a terminal's Ctrl-C, `kill -TERM -PGID`,
    SLURM's scancel) does not reach the served model's server, which was started in a session
    of its own with the stopping signals held at its fork (`core.stop_signals.start_child`): the
    run's calls in flight are answered within its grace, and the run itself stops the server."""
    run_dir = tmp_path / "run"
    started = start(
        [sys.executable, "-m", "healthbench_exp", *LIGHT, "model=vllm", "model.name=org/slow",
         "offline_server.latency_ms=1500", f"hydra.run.dir={run_dir}"],
        tmp_path / "run.log", terminal=False, env={"PATH": stand_in_env()["PATH"]},
    )  # fmt: skip
    log = run_dir / "healthbench.log"
    try:
        wait_for(lambda: log.exists() and "served at" in log.read_text(), 120, "the served model")
        wait_for(lambda: requests_in_flight(log) > 0, 60, "judge requests held by the endpoint")
        deliver(started, Delivery(stop, to_group=True, terminal=False))
        code = started.process.wait(timeout=120)
    finally:
        if started.process.poll() is None:
            started.process.kill()
        started.close()
    assert code == 128 + stop, started.output()[-3000:]
    assert json.loads((run_dir / "status.json").read_text())["status"] == "interrupted"
    assert abandoned_calls(run_dir) == 0, started.output()[-3000:]
    (life,) = server_lives(run_dir / "vllm.log")
    assert_gone(life)
    assert "healthbench-exp: the server stopped (SIGTERM)" in (run_dir / "vllm.log").read_text()

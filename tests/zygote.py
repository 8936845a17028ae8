"""`python -m healthbench_exp` in a subprocess without paying its imports every time.

A run of the CLI costs a loaded 2-core machine about 3 CPU-seconds of imports (Hydra, openai,
aiohttp, `datasets`, W&B) before it does anything, and the suite starts a few hundred runs. This
module, run as `python -m tests.zygote`, imports those once and then forks one child per request:
each child is a separate process that sets its argv, environment, working directory and standard
streams, and runs `healthbench_exp` as `python -m` does (`runpy`), so exit codes, signals, atexit
handlers and the files it writes are those of a fresh `python -m healthbench_exp`.

`spawn` (used by `run_cli` and `start_run`) falls back to a plain `python -m` whenever the
environment differs from the zygote's in a variable that the imported libraries read at import
time (HOME, XDG_*, HF_*, PYTHON*), so such a test sees exactly what a user sees; and always with
HEALTHBENCH_TESTS_FORK=0 in pytest's environment (to compare, or to rule the zygote out).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.capabilities import drop_capabilities

REPO = Path(__file__).resolve().parents[1]
# what the zygote's libraries read while importing: a request that changes them runs plainly
# (W&B reads WANDB_DIR when a run starts, not on import: tests/output/test_tracking.py checks
# that the offline runs land in the WANDB_DIR each test sets; NETRC is read when a client asks
# for credentials (requests, aiohttp, W&B, the harness's `wandb.mode`), never on import: the
# tests without a W&B login check that a missing NETRC file is read instead of ~/.netrc)
IMPORT_TIME_PREFIXES = ("HOME", "XDG_", "HF_", "HUGGINGFACE", "PYTHON")
ENVIRONMENT = dict(os.environ)  # this process's, as pytest started it (before any monkeypatch)


# ---- the zygote (its own process) ----------------------------------------------------------


def _serve() -> dict | None:
    """Answer requests until stdin closes (returns None); in a forked child, return its request."""
    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    pending = b""

    def send(message: dict) -> None:
        os.write(1, (json.dumps(message) + "\n").encode())

    os.write(1, b'{"ready": true}\n')
    while True:
        for key, _ in selector.select(timeout=1.0):
            if key.fd == wake_read:
                while True:
                    try:
                        if not os.read(wake_read, 4096):
                            break
                    except BlockingIOError:
                        break
                continue
            data = os.read(0, 1 << 16)
            if not data:
                return None
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                request = json.loads(line)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    selector.close()
                    os.close(wake_read)
                    os.close(wake_write)
                    return request
                send({"id": request["id"], "pid": pid})
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            send({"pid": pid, "status": status})


def _become(request: dict) -> None:
    """In the forked child: take the request's streams, directory, environment, file-size limit
    (`RLIMIT_FSIZE`, with SIGXFSZ ignored: a write past it fails with EFBIG) and capabilities
    to drop (`drop_capabilities`)."""
    if request.get("drop"):
        drop_capabilities(request["drop"])
    if request.get("fsize") is not None:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (request["fsize"], request["fsize"]))
    for fd, path, flags in (
        (0, os.devnull, os.O_RDONLY),
        (1, request["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
        (2, request["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
    ):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = ["-m", *request["argv"][1:]]  # runpy puts the module's path first, as `-m` does


# ---- the client (in the test process) ------------------------------------------------------


class _Zygote:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.zygote"],
            cwd=REPO, env=ENVIRONMENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdout is not None and self.process.stdin is not None
        ready = self.process.stdout.readline()
        if json.loads(ready or b"{}").get("ready") is not True:
            raise RuntimeError("the zygote did not start")
        self.lock = threading.Lock()
        self.changed = threading.Condition()
        self.pids: dict[int, int] = {}  # request id -> pid
        self.statuses: dict[int, int] = {}  # pid -> wait status
        self.next_id = 0
        self.folder = Path(tempfile.mkdtemp(prefix="zygote-"))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            message = json.loads(line)
            with self.changed:
                if "status" in message:
                    self.statuses[message["pid"]] = message["status"]
                else:  # a new child: a status kept for an earlier process of its pid is stale
                    self.statuses.pop(message["pid"], None)
                    self.pids[message["id"]] = message["pid"]
                self.changed.notify_all()

    def start(
        self, argv: list[str], env: dict[str, str], cwd: Path, fsize: int | None = None,
        drop: list[int] | None = None,
    ) -> ForkedRun:  # fmt: skip
        with self.lock:
            self.next_id += 1
            number = self.next_id
            out, err = self.folder / f"{number}.out", self.folder / f"{number}.err"
            request = {"id": number, "argv": argv, "env": env, "cwd": str(cwd),
                       "out": str(out), "err": str(err), "fsize": fsize, "drop": drop}  # fmt: skip
            assert self.process.stdin is not None
            self.process.stdin.write((json.dumps(request) + "\n").encode())
            self.process.stdin.flush()
        with self.changed:
            self.changed.wait_for(lambda: number in self.pids, timeout=60)
            pid = self.pids.pop(number)
        return ForkedRun(self, pid, [sys.executable, "-m", *argv], out, err)

    def wait(self, pid: int, timeout: float | None) -> int | None:
        """The wait status of `pid` once it ended (None if still running after `timeout`)."""
        with self.changed:
            self.changed.wait_for(lambda: pid in self.statuses, timeout=timeout)
            return self.statuses.get(pid)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(timeout=30)
        shutil.rmtree(self.folder, ignore_errors=True)  # the runs' captured output


class ForkedRun:
    """What `subprocess.Popen` offers the tests, for a run forked by the zygote."""

    def __init__(self, zygote: _Zygote, pid: int, args: list[str], out: Path, err: Path) -> None:
        self.zygote, self.pid, self.args = zygote, pid, args
        self.out, self.err = out, err
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self.wait(timeout=0) if self.returncode is None else self.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        if self.returncode is None:
            status = self.zygote.wait(self.pid, timeout)
            if status is None:
                if timeout == 0:
                    return None
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        return self.out.read_text(errors="replace"), self.err.read_text(errors="replace")

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_zygote: list[_Zygote] = []


def _plain(env: dict[str, str]) -> bool:
    """Whether `env` changes what the zygote's imports read (then run a plain `python -m`)."""
    keys = {k for k in {*env, *ENVIRONMENT} if k.startswith(IMPORT_TIME_PREFIXES)}
    return any(env.get(k) != ENVIRONMENT.get(k) for k in keys)


def _limited(fsize: int | None, drop: list[int] | None) -> Callable[[], None] | None:
    """For a plain start: what `_become` does with a file-size limit and capabilities to drop,
    before the exec."""
    if fsize is None and not drop:
        return None

    def limit() -> None:
        if drop:
            drop_capabilities(drop)
        if fsize is not None:
            import resource

            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return limit


def spawn(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
    module: str = "healthbench_exp",
    fsize: int | None = None,
    drop: list[int] | None = None,
) -> ForkedRun | subprocess.Popen:
    """Start `python -m <module> <args>` with `env` (default: this process's) in `cwd`; `module`
    is the CLI or another of the package's (`healthbench_exp.aggregate`, `.cache`; not the W&B
    worker, which writes media into a folder W&B made on import, removed when a child exits).
    `fsize`: a file-size limit in bytes (RLIMIT_FSIZE, SIGXFSZ ignored: a full disk for one
    process); `drop`: capabilities it runs without (`drop_capabilities`)."""
    environment = dict(os.environ if env is None else env)
    if not _forks(environment):
        return subprocess.Popen(
            [sys.executable, "-m", module, *args], cwd=cwd, env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=_limited(fsize, drop),
        )  # fmt: skip
    return _the_zygote().start([module, *args], environment, cwd, fsize, drop)


def _forks(env: dict[str, str]) -> bool:
    """Whether `spawn` forks a run with `env` from the zygote (else: a plain `python -m`)."""
    return not _plain(env) and ENVIRONMENT.get("HEALTHBENCH_TESTS_FORK") != "0"


def _the_zygote() -> _Zygote:
    """This process's zygote, started on first use."""
    if not _zygote:
        _zygote.append(_Zygote())
        atexit.register(_zygote[0].close)
    return _zygote[0]


def run(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path = REPO,
    timeout: float = 300,
    module: str = "healthbench_exp",
    fsize: int | None = None,
    drop: list[int] | None = None,
) -> subprocess.CompletedProcess:
    """`spawn`, waited for: a `subprocess.run(..., capture_output=True, text=True)` result."""
    process = spawn(*args, env=env, cwd=cwd, module=module, fsize=fsize, drop=drop)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode is not None
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


class ForkedServer:
    """The built-in endpoint as `healthbench_exp.builtin_endpoint.server.ServerProcess` starts it
    (`python -m healthbench_exp.offline_server --port=0 --parent-pid=<its parent>`: a free port,
    ending with its parent), forked from the zygote: the same server in a process of its own,
    without ~0.3 CPU-s of imports. `with ForkedServer(server_args(...)) as server:`."""

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.process: ForkedRun | subprocess.Popen | None = None
        self.base_url = ""

    def __enter__(self) -> ForkedServer:
        # it ends with its parent: the zygote (which ends with this process) where forked
        parent = _the_zygote().process.pid if _forks(dict(os.environ)) else os.getpid()
        argv = ["--port=0", f"--parent-pid={parent}", *self.args]
        self.process = spawn(*argv, module="healthbench_exp.offline_server")
        line = _first_line(self.process, timeout=60)
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError(f"built-in server did not start (said {line!r})")
        self.base_url = line.split()[-1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=5)
        if isinstance(self.process, subprocess.Popen):
            self.process.communicate()  # closes its pipes


def _first_line(process: ForkedRun | subprocess.Popen, timeout: float) -> str:
    """The first line `process` writes to its standard output ('' if it ends first)."""
    if isinstance(process, subprocess.Popen):
        assert process.stdout is not None
        return process.stdout.readline()
    deadline = time.monotonic() + timeout
    while True:
        text = process.out.read_text(errors="replace") if process.out.exists() else ""
        if "\n" in text or process.poll() is not None or time.monotonic() > deadline:
            return text.split("\n")[0]
        time.sleep(0.01)


# what a run imports (a demo run with W&B offline, measured): once here, the children inherit it
WARM = (
    "healthbench_exp.cli.app", "healthbench_exp.cli.sweep_checks",
    "healthbench_exp.sweep.aggregate",
    "datasets", "wandb", "openai", "uvloop", "anyio", "antlr4", "encodings.idna",
    "hydra._internal.core_plugins.basic_launcher", "hydra._internal.core_plugins.basic_sweeper",
    "hydra._internal.core_plugins.file_config_source", "hydra._internal.logging_config",
    "hydra._internal.core_plugins.importlib_resources_config_source",
    "hydra._internal.core_plugins.structured_config_source",
    "hydra_plugins.healthbench_exp_launcher._launcher",
    "hydra_plugins.healthbench_exp_launcher.slurm_launcher",
    "hydra_plugins.hydra_joblib_launcher.joblib_launcher",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher",
    "multiprocessing.synchronize", "omegaconf._impl",
)  # fmt: skip


if __name__ == "__main__":
    import contextlib
    import gc
    import importlib

    for _name in WARM:
        # a module some version a floor allows lacks (hydra-core 1.3.2: logging_config) is
        # skipped: the child imports what it needs itself, a little slower
        with contextlib.suppress(ModuleNotFoundError):
            importlib.import_module(_name)
    # what the imports made is kept out of every collection: a child's first full collection
    # (`engine.loop.steady_collector` runs one) scans only what the child made, about 0.1 CPU-s
    # less per run, and touches no inherited page (no copy-on-write of the whole heap)
    gc.collect()
    gc.freeze()
    _request = _serve()
    if _request is None:
        raise SystemExit(0)
    _become(_request)
    import runpy

    runpy._run_module_as_main(_request["argv"][0])  # type: ignore[attr-defined]  # as `-m` does

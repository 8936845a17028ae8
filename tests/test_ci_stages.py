"""`.ci/run`'s stage timing (`.ci/stages.sh`): each stage's wall time as it ends and all of them
when the script exits, on success and on failure, the exit status and `set -euo pipefail`'s
stops left as they were."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STAGES = REPO / ".ci" / "stages.sh"

SCRIPT = """set -euo pipefail
. "{stages}"
set -x
stage first
sleep 1.2
stage second
{second}
echo after-second
"""


def run_script(tmp_path: Path, second: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "ci.sh"
    script.write_text(SCRIPT.format(stages=STAGES, second=second))
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60)


def test_each_stage_and_the_total_are_timed(tmp_path: Path) -> None:
    result = run_script(tmp_path, "true")
    assert result.returncode == 0, result.stderr
    assert "after-second" in result.stdout
    ended = re.search(r"^== stage first: (\d+) s$", result.stderr, re.M)
    assert ended is not None, result.stderr
    table = result.stderr.split("== stage times (wall):\n")[1]
    times = [line.split() for line in table.splitlines()]
    assert [line[1:] for line in times] == [
        ["s", "first"], ["s", "second"], ["s", "in", "all,", "exit", "0"]
    ], times  # fmt: skip
    first, second, total = (int(line[0]) for line in times)
    assert first == int(ended.group(1)) >= 1  # it slept 1.2 s (more on a busy machine)
    assert total >= first + second - 1  # whole seconds, each rounded down
    assert "local flags" not in result.stderr  # the trace shows `stage NAME`, not its lines


def test_a_failing_stage_keeps_the_exit_status_and_is_named(tmp_path: Path) -> None:
    result = run_script(tmp_path, "false | true")  # pipefail: the pipeline fails
    assert result.returncode == 1
    assert "after-second" not in result.stdout  # set -e still stops the script
    assert result.stderr.rstrip().endswith("in all, exit 1 (in stage second)"), result.stderr
    assert re.search(r"^       0 s  second$", result.stderr, re.M), result.stderr

    result = run_script(tmp_path, "exit 7")
    assert result.returncode == 7
    assert result.stderr.rstrip().endswith("in all, exit 7 (in stage second)")


def test_ci_run_times_its_stages() -> None:
    text = (REPO / ".ci" / "run").read_text()
    assert ". .ci/stages.sh\n" in text
    stages = re.findall(r"^stage (\w+)$", text, re.M)
    assert stages[0] == "setup" and {"tests", "wheel_demo", "floors"} <= set(stages)

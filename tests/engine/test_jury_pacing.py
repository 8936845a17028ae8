"""Each jury member paces its own requests (issue 30.1): a member whose account is rate-limited
waits out its 429s while the primary judge and the other member, on an unlimited account, are
never refused and never wait, in an eval and in a meta-eval. End to end: `python -m
healthbench_exp` in a subprocess; the limited member has a loopback built-in endpoint of its own
(5 requests and 15,000 tokens a second, 300 ms a reply), the others the run's built-in endpoint.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled", "sampling.num_examples=12")
LIMITED, FREE = "offline-judge-b", "offline-judge-c"


@pytest.mark.parametrize("task", ["eval", "meta_eval"])
def test_only_the_rate_limited_member_waits(loopback_server, tmp_path: Path, task: str) -> None:
    server = loopback_server(
        latency_ms=300, rate_limit_requests=5, rate_limit_tokens=15000, rate_limit_window_s=1
    )
    conf = tmp_path / "conf" / "judge"
    conf.mkdir(parents=True)
    (conf / "offline_b.yaml").write_text(
        f"defaults:\n  - offline\nname: {LIMITED}\nbuiltin: false\nbase_url: {server.base_url}\n",
        encoding="utf-8",
    )
    (conf / "offline_c.yaml").write_text(
        f"defaults:\n  - offline\nname: {FREE}\n", encoding="utf-8"
    )
    run_dir = tmp_path / "run"
    result = run_cli(
        *DEMO,
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "jury=[offline_b,offline_c]",
        f"task={task}",
        "cache.enabled=false",
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    counts, usage = summary["counts"], summary["usage"]
    refused = server.stats()["rate_limited"]
    assert refused > 0  # the limited member's account answered 429s
    # the run counts them for that member alone: every 429 it got, none for the others
    roles = {"model": 0} if task == "eval" else {}  # a meta-eval has no model
    assert counts["rate_limited"] == {**roles, "judge": 0, LIMITED: refused, FREE: 0}
    assert counts["request_errors"][LIMITED] == {}  # every refused request waited, then sent
    # it graded every criterion (a meta-eval: every row) all the same, each paid once
    criteria = counts["criteria"] if task == "eval" else counts["rows"]
    assert usage["jury"][LIMITED]["requests"] == usage["jury"][FREE]["requests"] == criteria
    assert server.stats()["judge_requests"] == criteria
    assert summary["jury"]["ungraded"] == {"offline-judge": 0, LIMITED: 0, FREE: 0}
    # its own pacer waited and said so, naming it; the others' never did
    shown = result.stdout + result.stderr
    assert f"{LIMITED} endpoint rate-limited (HTTP 429): waiting" in shown
    for other in ("judge", FREE, "model"):
        assert f"\n{other} endpoint rate-limited" not in shown
        assert f" {other} endpoint rate-limited" not in shown
        assert f"rate-limited {other}:" not in shown
    assert f"rate-limited {LIMITED}: " in result.stderr  # the progress line, for it alone

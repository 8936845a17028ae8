"""A bad `offline_server.rate_limit_schedule` is refused at start-up, named with the other
problems, in one line, exit 2, before anything runs."""

from __future__ import annotations

import pytest

from healthbench_exp.config.ranges import rate_limit_schedule
from tests.e2e.test_e2e import run_cli


@pytest.mark.parametrize("entry", ["5:x", "5", "5:1.0", "-1:0.5", "nan:0.5", "5:-0.1"])
def test_a_schedule_entry_that_is_not_t_s_is_named(entry: str) -> None:
    with pytest.raises(ValueError, match=f"offline_server.rate_limit_schedule: '{entry}' is not"):
        rate_limit_schedule(f"1:0.5,{entry}")
    assert rate_limit_schedule("20:0.5, 8:0.25,") == [(8.0, 0.25), (20.0, 0.5)]


def test_a_bad_schedule_is_refused_at_start_up_with_the_other_problems(tmp_path) -> None:
    result = run_cli(
        "experiment=demo",
        "wandb=disabled",
        "offline_server.rate_limit_schedule=5:x",
        "offline_server.limited_role=bogus",
        f"hydra.run.dir={tmp_path}",
    )
    assert result.returncode == 2, result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "offline_server.rate_limit_schedule: '5:x' is not T:S" in line
    assert "offline_server.limited_role must be all, model or judge" in line
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "summary.json").exists() and not (tmp_path / "results").exists()

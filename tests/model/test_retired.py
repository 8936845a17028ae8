"""Models that come and go: every preset records its shutdown date; at start-up a model within 60
days warns once, a retired or unknown one stops the run (exit 2) before any request; the built-in
endpoint serves `shutdown_date` and answers a retired model 404 model_not_found, as OpenAI does."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from healthbench_exp.config.schema import EndpointConfig
from healthbench_exp.model.retired import (
    ModelRetired,
    ServerAnswer,
    Shutdown,
    judge_shutdown,
    shutdown_of,
)
from tests.dates import day, in_days
from tests.e2e.test_e2e import run_cli

CONF = Path(__file__).parents[2] / "healthbench_exp" / "conf"


@pytest.mark.parametrize("preset", sorted([*CONF.glob("model/*.yaml"), *CONF.glob("judge/*.yaml")]))
def test_every_preset_records_its_shutdown_date_and_where_it_was_read(preset: Path) -> None:
    data = yaml.safe_load(preset.read_text())
    assert "shutdown_date" in data and data["shutdown_source"], preset.name
    if data["shutdown_date"] is not None:
        date.fromisoformat(data["shutdown_date"])
        assert data["replacements"], f"{preset.name}: a retiring preset names its replacements"
        role = preset.parent.name
        for name in data["replacements"]:
            assert (CONF / role / f"{name}.yaml").is_file(), f"{preset.name}: no {role}={name}"


def test_the_known_dates_of_openais_deprecations_page() -> None:
    def shutdown(path: str) -> Any:
        return yaml.safe_load((CONF / path).read_text())["shutdown_date"]

    for path in (
        "judge/gpt41.yaml",
        "model/gpt41.yaml",
        "model/gpt41mini.yaml",
        "judge/gpt41mini.yaml",
    ):
        assert shutdown(path) == "2027-01-14"
    assert shutdown("model/gpt4o.yaml") == "2027-01-14"
    assert shutdown("model/o4mini.yaml") == shutdown("judge/o4mini.yaml") == "2026-10-23"
    assert shutdown("model/o3.yaml") == "2026-12-11"
    assert shutdown("model/offline.yaml") is shutdown("judge/offline.yaml") is None


def _endpoint(shutdown_date: str | None) -> EndpointConfig:
    return EndpointConfig(name="m-1", shutdown_date=shutdown_date, replacements=["new1", "new2"])


def test_sixty_days_warn_sixty_one_do_not_the_day_itself_refuses() -> None:
    today = date(2026, 11, 25)
    endpoint = _endpoint("2027-01-24")  # 60 days after 2026-11-25
    line = judge_shutdown(shutdown_of("judge", endpoint, None), endpoint, today)
    assert line is not None and "shuts down on 2027-01-24, in 60 days" in line
    assert "judge=new1, judge=new2" in line and "docs/judges.md" in line
    later = _endpoint("2027-01-25")
    assert judge_shutdown(shutdown_of("judge", later, None), later, today) is None
    on_the_day = _endpoint("2026-11-25")
    with pytest.raises(ModelRetired, match="retired: shut down since 2026-11-25"):
        judge_shutdown(shutdown_of("judge", on_the_day, None), on_the_day, today)
    assert (
        judge_shutdown(shutdown_of("judge", _endpoint(None), None), _endpoint(None), today) is None
    )


def test_the_servers_date_wins_over_the_presets_where_given() -> None:
    endpoint = _endpoint("2020-01-01")
    told = shutdown_of("model", endpoint, ServerAnswer(given=True, shutdown_date="2030-05-01"))
    assert told == Shutdown("model", "m-1", date(2030, 5, 1), "server")
    silent = shutdown_of("model", endpoint, ServerAnswer())  # no shutdown_date field: the preset
    assert silent.date == date(2020, 1, 1) and silent.source == "preset"
    none_announced = shutdown_of("model", endpoint, ServerAnswer(given=True, shutdown_date=None))
    assert none_announced.date is None


def get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_builtin_endpoint_serves_shutdown_dates_and_refuses_retired_models(
    loopback_server: Any,
) -> None:
    soon = day(30)
    server = loopback_server(shutdown_dates=f"old-1={day(-1)},soon-1={soon}")
    status, listed = get(f"{server.base_url}/models")
    assert status == 200 and listed["data"] == [
        {"id": "soon-1", "object": "model", "created": 0, "owned_by": "system",
         "shutdown_date": soon}
    ]  # fmt: skip
    assert get(f"{server.base_url}/models/soon-1")[1]["shutdown_date"] == soon
    assert "shutdown_date" not in get(f"{server.base_url}/models/other-1")[1]
    status, body = get(f"{server.base_url}/models/old-1")
    assert status == 404 and body["error"]["code"] == "model_not_found"
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(
            {"model": "old-1", "messages": [{"role": "user", "content": "hi"}]}
        ).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 404
    assert json.loads(refused.value.read())["error"]["code"] == "model_not_found"


def _run(tmp_path: Path, url: str, judge: str, *args: str) -> Any:
    return run_cli(
        "model=offline", "judge=openai_compatible", f"judge.name={judge}",
        f"judge.base_url={url}", "difficulty=sample", "sampling.num_examples=2",
        "wandb=disabled", *args, f"hydra.run.dir={tmp_path}",
    )  # fmt: skip


def test_a_judge_the_server_dates_within_60_days_warns_once_and_runs(
    tmp_path: Path, loopback_server: Any
) -> None:
    began, soon = date.today(), day(30)
    server = loopback_server(shutdown_dates=f"soon-1={soon}")
    result = _run(tmp_path, server.base_url, "soon-1", "judge.replacements=[gpt54]")
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr  # the log's console lines go to stdout
    lines = [x for x in output.splitlines() if "shuts down" in x]
    assert len(lines) == 1, output
    assert any(
        f"judge: model soon-1 shuts down on {soon}, {days} (per the server)" in lines[0]
        for days in in_days(soon, began)
    ), lines[0]
    assert "use judge=gpt54 instead" in lines[0] and "docs/judges.md" in lines[0]
    assert server.stats()["requests"] > 0


def test_a_judge_the_server_no_longer_knows_stops_the_run_before_any_request(
    tmp_path: Path, loopback_server: Any
) -> None:
    server = loopback_server(shutdown_dates=f"old-1={day(-3)}")
    result = _run(tmp_path, server.base_url, "old-1", "judge.replacements=[gpt54,gpt61sol]")
    assert result.returncode == 2
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "judge: the server at" in line and "old-1 does not exist (404 model_not_found)" in line
    assert "use judge=gpt54, judge=gpt61sol instead (see docs/judges.md)" in line
    assert server.stats().get("requests", 0) == 0
    assert not (tmp_path / "examples.jsonl").exists()


def test_a_preset_past_its_date_stops_the_run_naming_the_date(
    tmp_path: Path, loopback_server: Any
) -> None:
    server = loopback_server()  # the server gives no date: the preset's applies
    past = day(-10)
    result = _run(tmp_path, server.base_url, "m-2", f"judge.shutdown_date={past}")
    assert result.returncode == 2
    assert f"judge: model m-2 is retired: shut down since {past}" in result.stderr
    assert server.stats().get("requests", 0) == 0


def test_the_o4mini_preset_is_retired(tmp_path: Path) -> None:
    result = run_cli(
        "experiment=demo", "judge=o4mini", "judge.builtin=true", "wandb=disabled",
        f"hydra.run.dir={tmp_path}",
    )  # fmt: skip
    assert result.returncode == 2
    assert "model o4-mini-2025-04-16 is retired: shut down since 2026-10-23" in result.stderr
    assert "use judge=gpt54, judge=gpt61sol instead" in result.stderr


def test_the_demo_does_not_warn(tmp_path: Path) -> None:
    result = run_cli("experiment=demo", "wandb=disabled", f"hydra.run.dir={tmp_path}")
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "shuts down" not in output and "retired" not in output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert round(summary["metrics"]["overall_score"], 4) == 0.2879


def test_a_sweep_checks_every_job_before_the_first_starts(tmp_path: Path) -> None:
    past = day(-1)
    result = run_cli(
        "-m", "experiment=demo", "wandb=disabled",
        f"judge.shutdown_date={day(400)},{past}", f"hydra.sweep.dir={tmp_path / 's'}",
    )  # fmt: skip
    assert result.returncode == 2
    assert "error: sweep job 1 (" in result.stderr and f"shut down since {past}" in result.stderr
    assert not list(tmp_path.glob("s/*/examples.jsonl"))  # job 0 (fine) did not start either

"""`<role>.api=responses`, end to end: the harness sends through the real openai client (or the
`direct` transport) to the built-in loopback server, which answers `/v1/responses` with the same
replies and verdicts as `/v1/chat/completions`; each test reads back what the server received or
what the run wrote."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from dataclasses import replace
from pathlib import Path

import openai
import pytest

from healthbench_exp import run as run_eval
from healthbench_exp.builtin_endpoint.replies import REASONING_TOKENS
from healthbench_exp.builtin_endpoint.server import server_args
from healthbench_exp.config.schema import (
    REFERENCE_SYSTEM_MESSAGE,
    Api,
    HttpClient,
    JudgeConfig,
    SamplingConfig,
)
from healthbench_exp.model.wire import read_reply
from tests.e2e.test_e2e import run_cli
from tests.engine.test_runner import make_config, read_jsonl, verdicts
from tests.model.test_cache import endpoint_args
from tests.zygote import ForkedServer


def received(base_url: str) -> list[dict]:
    """The latest request bodies the loopback server received, with their paths."""
    url = base_url.removesuffix("/v1") + "/stats/requests"
    with urllib.request.urlopen(url) as response:
        return json.loads(response.read())["requests"]


def responses_config(base_url: str, **changes):
    config = make_config(base_url, **changes)
    return replace(
        config,
        model=replace(config.model, api=Api.responses),
        judge=replace(config.judge, api=Api.responses),
    )


@pytest.mark.parametrize("client", [HttpClient.aiohttp, HttpClient.direct])
def test_responses_request_bodies_as_the_server_received_them(
    loopback_server, tmp_path: Path, client: HttpClient
) -> None:
    server = loopback_server()
    config = responses_config(server.base_url, sampling=SamplingConfig(num_examples=1))
    config = replace(
        config,
        model=replace(config.model, service_tier="priority"),
        judge=replace(config.judge, reasoning=True, reasoning_effort="low", service_tier="flex"),
        runner=replace(config.runner, http_client=client),
    )
    run_eval(config, tmp_path, {})
    everything = received(server.base_url)
    assert {b["path"] for b in everything} == {"/v1/responses"}
    # first, each role's start-up check that the server has the Responses API: an empty body
    assert [b["body"] for b in everything[:2]] == [{}, {}]
    bodies = everything[2:]
    model = [b["body"] for b in bodies if b["body"]["model"] == "policy"]
    judge = [b["body"] for b in bodies if b["body"]["model"] == "judge"]
    (example,) = read_jsonl(tmp_path / "examples.jsonl")
    prompt = example["messages"][1:]  # as the row has it, after the system message
    assert model == [
        {
            "model": "policy",
            "temperature": 0.5,
            "max_output_tokens": 2048,
            "service_tier": "priority",
            "input": [{"role": "developer", "content": REFERENCE_SYSTEM_MESSAGE}, *prompt],
        }
    ]
    assert example["messages"][0] == {"role": "developer", "content": REFERENCE_SYSTEM_MESSAGE}
    assert len(judge) == len(read_jsonl(tmp_path / "per_criterion.jsonl"))
    for body in judge:  # a reasoning judge: effort, no temperature or reply length
        assert set(body) == {"model", "reasoning", "service_tier", "input"}
        assert body["reasoning"] == {"effort": "low"} and body["service_tier"] == "flex"
        assert body["input"][0] == {"role": "developer", "content": REFERENCE_SYSTEM_MESSAGE}
        assert body["input"][1]["role"] == "user"
        # the grader sees the conversation as it was sent: the developer message first
        assert f"developer: {REFERENCE_SYSTEM_MESSAGE}" in body["input"][1]["content"]


def test_the_demo_through_the_responses_api_scores_the_same(tmp_path: Path) -> None:
    env = {"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")}
    result = run_cli(
        "experiment=demo", "wandb=disabled", "runner.progress=false",
        "model.api=responses", "judge.api=responses", f"hydra.run.dir={tmp_path / 'run'}",
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert round(summary["metrics"]["overall_score"], 4) == 0.2879  # the README's figure
    protocol = summary["protocol"]
    assert protocol["judge_transport"] == "responses"
    assert protocol["endpoints"]["model"]["api"] == "responses"
    assert protocol["endpoints"]["judge"] == {
        "api": "responses", "system_message": REFERENCE_SYSTEM_MESSAGE, "service_tier": None,
    }  # fmt: skip
    assert "judge.api: chat -> responses" in protocol["deviations"]


def test_an_incomplete_response_is_a_length_finish(loopback_server, tmp_path: Path) -> None:
    server = loopback_server()

    async def one() -> object:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="-") as client:
            return await client.post(
                "/responses",
                body={"model": "policy", "input": "Hello?", "max_output_tokens": 2},
                cast_to=object,
            )

    reply = read_reply(Api.responses, json.loads(json.dumps(asyncio.run(one()))))
    assert reply.finish_reason == "length" and len(reply.text) == 8  # 2 tokens of 4 characters
    # through the harness: the cut reply is graded, as a chat `length` finish is
    sampling = SamplingConfig(num_examples=8, max_tokens=3)
    config = responses_config(server.base_url, sampling=sampling)
    summary = run_eval(config, tmp_path, {})
    assert summary["counts"]["rows_scored"] == 8 and summary["counts"]["rows_failed"] == 0
    assert {len(e["completion"]) for e in read_jsonl(tmp_path / "examples.jsonl")} == {12}


def test_usage_maps_input_output_cached_and_reasoning_tokens(
    loopback_server, tmp_path: Path
) -> None:
    chat_server, responses_server = loopback_server(), loopback_server()  # fresh prefix caches
    chat = make_config(chat_server.base_url)
    chat = replace(
        chat,
        model=replace(chat.model, reasoning=True, reasoning_effort="low"),
        judge=replace(chat.judge, prompt_cache_key=True),
        # one call at a time: the server's prefix cache then serves both runs alike
        runner=replace(chat.runner, max_concurrent=1, max_parallel_judges=1),
    )
    url = responses_server.base_url
    responses = replace(
        chat,
        model=replace(chat.model, api=Api.responses, base_url=url),
        judge=replace(chat.judge, api=Api.responses, base_url=url),
    )
    by_chat = run_eval(chat, tmp_path / "chat", {})["usage"]
    by_responses = run_eval(responses, tmp_path / "responses", {})["usage"]
    fields = ("prompt_tokens", "cached_prompt_tokens", "completion_tokens", "reasoning_tokens")
    for role in ("model", "judge"):
        assert by_responses[role]["requests"] == by_chat[role]["requests"] > 0
        for field in fields:
            assert by_responses[role][field] == by_chat[role][field], (role, field)
    assert by_responses["model"]["reasoning_tokens"] == 8 * REASONING_TOKENS
    assert by_responses["judge"]["cached_prompt_tokens"] > 0  # the shared prefix, served cached


def test_the_cache_key_differs_by_api(loopback_server, tmp_path: Path, monkeypatch) -> None:
    """Even where both APIs would send the same parameters and messages (reasoning calls, no
    system message), a reply of one is never the other's."""
    monkeypatch.setenv("HEALTHBENCH_CACHE_DIR", str(tmp_path / "cache"))
    server = loopback_server()
    chat = make_config(server.base_url)
    chat = replace(
        chat,
        model=replace(chat.model, reasoning=True, system_message=None),
        judge=replace(chat.judge, reasoning=True, system_message=None),
    )
    responses = replace(
        chat,
        model=replace(chat.model, api=Api.responses),
        judge=replace(chat.judge, api=Api.responses),
    )
    first = run_eval(chat, tmp_path / "chat", {})["usage"]
    again = run_eval(responses, tmp_path / "responses", {})["usage"]
    for role in ("model", "judge"):  # nothing answered by the chat run's replies
        assert again[role]["cache_hits"] == 0
        assert again[role]["requests"] == first[role]["requests"] > 0
    replay = run_eval(responses, tmp_path / "replay", {})["usage"]
    assert replay["judge"]["cache_hits"] == first["judge"]["requests"]
    assert replay["judge"]["requests"] == 0
    assert verdicts(tmp_path / "responses") == verdicts(tmp_path / "chat")


def test_batch_lines_go_to_v1_responses(loopback_server, tmp_path: Path) -> None:
    server = loopback_server()
    config = responses_config(server.base_url)
    config = replace(
        config,
        judge=replace(config.judge, batch=True, batch_poll_s=0.05, service_tier="flex"),
    )
    batched = run_eval(config, tmp_path / "batch", {})
    root = server.base_url
    with urllib.request.urlopen(f"{root}/batches/batch_offline_1") as response:
        batch = json.loads(response.read())
    assert batch["endpoint"] == "/v1/responses"
    with urllib.request.urlopen(f"{root}/files/{batch['input_file_id']}/content") as response:
        lines = [json.loads(line) for line in response.read().decode().splitlines()]
    assert len(lines) == batched["usage"]["judge"]["requests"] > 0
    for line in lines:
        assert line["url"] == "/v1/responses"
        assert set(line["body"]) == {"model", "temperature", "max_output_tokens", "input"}
        assert line["body"]["input"][0]["role"] == "developer"
    sync = run_eval(make_config(server.base_url), tmp_path / "sync", {})
    assert verdicts(tmp_path / "batch") == verdicts(tmp_path / "sync")
    assert batched["metrics"] == sync["metrics"]


def test_a_jury_member_speaks_its_own_api(loopback_server, tmp_path: Path) -> None:
    server = loopback_server()
    base = make_config(server.base_url)
    base = replace(base, judge=replace(base.judge, name="primary"))  # "judge" is reserved
    member = JudgeConfig(name="juror", base_url=server.base_url, api_key_env=None)
    by_chat = replace(base, jury=["juror"], jury_members=[member])
    by_responses = replace(base, jury=["juror"], jury_members=[replace(member, api=Api.responses)])
    run_eval(by_chat, tmp_path / "chat", {})
    paths = {(b["body"].get("model"), b["path"]) for b in received(server.base_url)}
    assert ("juror", "/v1/chat/completions") in paths and ("juror", "/v1/responses") not in paths
    server.reset()
    run_eval(by_responses, tmp_path / "responses", {})  # the model and primary judge: cached
    paths = {(b["body"].get("model"), b["path"]) for b in received(server.base_url)}
    assert ("juror", "/v1/responses") in paths and ("juror", "/v1/chat/completions") not in paths

    def juror(run: str) -> dict:
        return {
            (r["prompt_id"], r["criterion_index"]): r["verdicts"]["juror"]
            for r in read_jsonl(tmp_path / run / "per_criterion.jsonl")
        }

    assert juror("responses") == juror("chat")
    # and the protocol records how each member was sent its calls, beside the model and judge
    for run, api in (("chat", "chat"), ("responses", "responses")):
        endpoints = json.loads((tmp_path / run / "summary.json").read_text())["protocol"][
            "endpoints"
        ]
        assert set(endpoints) == {"model", "judge", "jury:juror"}
        assert endpoints["jury:juror"] == {
            "api": api, "system_message": member.system_message, "service_tier": None,
        }  # fmt: skip


def test_a_server_without_v1_responses_fails_naming_model_api(tmp_path: Path) -> None:
    with ForkedServer(server_args(no_responses_api=True)) as server:
        result = run_cli(
            *endpoint_args(server.base_url), "model.api=responses", "runner.progress=false",
            f"hydra.run.dir={tmp_path / 'run'}",
            env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
        )  # fmt: skip
        with urllib.request.urlopen(server.base_url.removesuffix("/v1") + "/stats") as response:
            stats = json.loads(response.read())
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if "model.api" in line]
    assert len(lines) == 1 and "404" in lines[0] and "set model.api=chat" in lines[0]
    assert stats["requests"] == 0  # nothing was sent, nothing paid


def test_the_dry_run_probes_and_reserves_through_the_responses_api(tmp_path: Path) -> None:
    """A dry run's rate-limit probe goes through the role's API, and the reply length it
    reserves against a tokens limit is the responses body's `max_output_tokens`."""
    limits = {"rate_limit_requests": 1000, "rate_limit_tokens": 1_000_000}
    with ForkedServer(server_args(**limits)) as server:
        result = run_cli(
            *endpoint_args(server.base_url), "dry_run=true", "judge.api=responses",
            "judge.rate_limit.probe=true", f"hydra.run.dir={tmp_path}",
            env={"HEALTHBENCH_CACHE_DIR": str(tmp_path / "cache")},
        )  # fmt: skip
        check, probe = received(server.base_url)  # the Responses API's start-up check first
    assert result.returncode == 0, result.stderr[-3000:]
    assert check == {"path": "/v1/responses", "body": {}}
    assert probe == {
        "path": "/v1/responses",
        "body": {"model": "j", "input": "Reply with OK.", "max_output_tokens": 16},
    }
    estimate = json.loads((tmp_path / "estimate.json").read_text())
    judge = estimate["rate_limited_duration"]["judge"]
    assert judge["tokens_per_minute"] == 1_000_000 and judge["requests_per_minute"] == 1000
    calls = estimate["judge"]["calls"] - estimate["judge"]["cached_calls"]
    assert judge["tokens"] == estimate["judge"]["prompt_tokens"] + calls * 2048

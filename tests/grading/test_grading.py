"""Grader prompt rendering, verdict parsing and bounded retries against a real server."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re

import pytest
from aiohttp import web

from healthbench_exp.builtin_endpoint.replies import judge_reply
from healthbench_exp.config.schema import EndpointConfig
from healthbench_exp.core.completer import Reply
from healthbench_exp.core.types import Criterion
from healthbench_exp.grading.grader import (
    GRADER_TEMPLATE_SHA256,
    grade_criterion,
    grader_prompt,
    grader_template,
    parse_verdict,
    render_conversation,
    rubric_item_text,
    unfenced,
)
from healthbench_exp.model.clock import SYSTEM_CLOCK
from healthbench_exp.model.endpoint import ChatEndpoint, Shared, Transport
from healthbench_exp.model.health import Halt
from tests.e2e.test_e2e import REPO
from tests.model.test_reasoning_effort import RecordingServer


def test_template_is_the_official_one() -> None:
    template = grader_template()
    assert len(template) == 3181
    assert hashlib.sha256(template.encode("utf-8")).hexdigest() == GRADER_TEMPLATE_SHA256
    assert template.count("<<conversation>>") == 1 and template.count("<<rubric_item>>") == 1


def test_rubric_item_keeps_points_as_in_the_data() -> None:
    assert rubric_item_text(Criterion("Is overly verbose", -8, ())) == "[-8] Is overly verbose"
    assert rubric_item_text(Criterion("Mentions fluids", 5, ())) == "[5] Mentions fluids"
    assert rubric_item_text(Criterion("Half point", 2.5, ())) == "[2.5] Half point"


def test_conversation_includes_the_system_message_and_reply() -> None:
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Hi {there}"},
        {"role": "assistant", "content": "Hello."},
    ]
    text = render_conversation(messages)
    assert text == "system: You are a helpful assistant.\n\nuser: Hi {there}\n\nassistant: Hello."


def test_grader_prompt_is_plain_replacement() -> None:
    prompt = grader_prompt("user: {a} <<x>>\n\nassistant: ok", "[-8] Uses {braces}")
    assert "<<conversation>>" not in prompt and "<<rubric_item>>" not in prompt
    assert (
        "# Conversation\nuser: {a} <<x>>\n\nassistant: ok\n\n# Rubric item\n[-8] Uses {braces}\n"
        in prompt
    )
    assert '"criteria_met": false' in prompt  # the template's own JSON braces survive
    assert prompt.startswith("Your job is to look at a conversation")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('```json\n{"explanation": "ok", "criteria_met": true}\n```', True),
        ('{"explanation": "no", "criteria_met": false}', False),
        ('  ```json{"criteria_met": false}```  ', False),
        ('{"criteria_met": "false"}', None),
        ('{"criteria_met": 1}', None),
        ('{"criteria_met": null}', None),
        ('{"explanation": "missing"}', None),
        ("[true]", None),
        ("The response meets the criterion.", None),
        ('Here you go: {"criteria_met": true}', None),
        ('```\n{"criteria_met": true}\n```', None),  # the reference strips only ```json fences
        ("", None),
    ],
)
def test_parse_verdict_accepts_only_a_real_boolean(reply: str, expected: bool | None) -> None:
    verdict = parse_verdict(reply)
    assert (verdict.criteria_met if verdict else None) is expected


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"criteria_met": true}\n```',
        '```json{"criteria_met": false}```',
        "```json```",
        "```json  ```",
        "```",
        "``````",
        "```json",
        "```jsonx```",
        "x```",
        "```json x ```  y```",
        "```json\u00a0{}\u2003```",  # Unicode whitespace: the pattern's \s matches it
        '{"criteria_met": true}',
        "",
    ],
)
def test_fences_are_stripped_as_the_reference_pattern_strips_them(reply: str) -> None:
    reference = re.compile(r"^```json\s*|\s*```$")  # simple-evals' parse
    text = reply.strip()
    assert unfenced(text) == reference.sub("", text)


def test_parse_verdict_defaults_the_explanation() -> None:
    verdict = parse_verdict('{"criteria_met": true}')
    assert verdict is not None and verdict.explanation == "No explanation provided"


def judge_endpoint(base_url: str) -> ChatEndpoint:
    config = EndpointConfig(name="judge", api_key_env=None, max_concurrency=4)
    return ChatEndpoint(
        "judge",
        config,
        base_url=base_url,
        api_key="k",
        temperature=0.5,
        max_tokens=2048,
        transport=Transport(max_retries=0, timeout_s=10),
        shared=Shared(halt=Halt(), clock=SYSTEM_CLOCK),
    )


def test_unparseable_judge_is_ungraded_after_bounded_retries(loopback_server) -> None:
    server = loopback_server(malformed_rate=1.0)

    async def go():
        judge = judge_endpoint(server.base_url)
        try:
            return await grade_criterion(judge, "user: hi\n\nassistant: hello", "[5] Greets", 2)
        finally:
            await judge.close()

    grade = asyncio.run(go())
    assert grade.criteria_met is None
    assert grade.attempts == 3
    assert "no valid verdict in 3 judge replies" in (grade.error or "")
    assert server.stats()["judge_requests"] == 3


def test_judge_sees_system_message_then_filled_template() -> None:
    conversation, item = "user: hi\n\nassistant: hello", "[5] Greets"

    async def go():
        server = RecordingServer()
        runner = web.AppRunner(server.app(), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        judge = judge_endpoint(f"http://127.0.0.1:{runner.addresses[0][1]}/v1")
        try:
            grade = await grade_criterion(judge, conversation, item, 0)
        finally:
            await judge.close()
            await runner.cleanup()
        return server.bodies, grade

    bodies, grade = asyncio.run(go())
    # what reached the server: the system message, then the official template filled in by
    # plain replacement (the file whitespace-stripped as simple-evals has it, read here)
    template = (REPO / "healthbench_exp" / "reference" / "grader_template.txt").read_text().strip()
    filled = template.replace("<<conversation>>", conversation).replace("<<rubric_item>>", item)
    (body,) = bodies
    assert body["messages"] == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": filled},
    ]
    assert body["temperature"] == 0.5 and body["max_tokens"] == 2048
    assert grade.criteria_met in (True, False) and grade.attempts == 1
    # the built-in judge's verdict is a pure function of the grader prompt
    expected = json.loads(judge_reply(filled)[8:-4])
    assert grade.criteria_met is expected["criteria_met"]


class _Recorder:
    """A Completer with no config at all: answers as the built-in judge and keeps the prompts."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(
        self, messages: list[dict[str, str]], tag: str = "", prefix_key: str | None = None
    ) -> Reply:
        from healthbench_exp.builtin_endpoint.replies import judge_reply

        self.prompts.append(messages[-1]["content"])
        return Reply(judge_reply(messages[-1]["content"]))


@pytest.mark.parametrize("order", ["reference", "shared_prefix_first"])
def test_grading_needs_only_a_completer_and_the_order(order: str) -> None:
    judge = _Recorder()
    conversation = "user: hi\n\nassistant: hello"
    grade = asyncio.run(grade_criterion(judge, conversation, "[5] Greets", 0, order=order))
    assert judge.prompts == [grader_prompt(conversation, "[5] Greets", order)]
    assert grade.criteria_met in (True, False) and grade.attempts == 1

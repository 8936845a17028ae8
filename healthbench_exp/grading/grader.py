"""The grader call exactly as simple-evals makes it (SPEC section 2), with bounded retries.

A verdict counts only when the judge returns a JSON object whose `criteria_met` is a real JSON
boolean. An empty reply is resampled like any other unparseable one, as the reference does.
After `1 + max_parse_retries` unusable replies (or a request that fails for good) the
criterion is *ungraded*: it carries `criteria_met=None` and is left out of the score, never
counted as "not met".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from healthbench_exp.core.endpoint_errors import BudgetExhausted, EmptyReply, RequestFailed
from healthbench_exp.core.types import Criterion, CriterionGrade

if TYPE_CHECKING:
    from healthbench_exp.core.completer import Completer
    from healthbench_exp.grading.verdict_watch import UnparseableWatch

GRADER_TEMPLATE_SHA256 = "2adffd51fd259554ebcd036ad1072d4aa2b7ce3aec2bbffe36271f911632ed3c"


@cache
def grader_template() -> str:
    """The official template, whitespace-stripped as simple-evals' `GRADER_TEMPLATE`."""
    return (
        (resources.files("healthbench_exp") / "reference" / "grader_template.txt")
        .read_text(encoding="utf-8")
        .strip()
    )


def rubric_item_text(criterion: Criterion) -> str:
    """`[points] criterion`, points printed as they appear in the data (`[5]`, `[-8]`)."""
    return f"[{criterion.points}] {criterion.text}"


def render_conversation(messages: list[dict[str, str]]) -> str:
    """Every message (system message included), each as `role: content`, joined by blank lines."""
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


RUBRIC_SECTION = "# Rubric item\n<<rubric_item>>\n\n"


@cache
def shared_prefix_first_template() -> str:
    """The official template with its rubric-item section moved to the very end.

    NOT the reference prompt: the instructions then follow the conversation directly, so the
    template and the conversation are one prefix shared by all of an example's judge calls, which
    providers' prompt caches can reuse; the words are the official ones.
    """
    template = grader_template()
    assert template.count(RUBRIC_SECTION) == 1, "the official template changed"
    return template.replace(RUBRIC_SECTION, "") + "\n\n" + RUBRIC_SECTION.rstrip("\n")


def grader_prompt(conversation: str, rubric_item: str, order: str = "reference") -> str:
    """Fill the template by plain replacement (it holds JSON braces, so never str.format).

    `order`: "reference" (the official template) or "shared_prefix_first" (see above).
    """
    template = grader_template() if order == "reference" else shared_prefix_first_template()
    return template.replace("<<conversation>>", conversation).replace(
        "<<rubric_item>>", rubric_item
    )


def template_sha256(order: str = "reference") -> str:
    """sha256 of the template a run filled (the official one: GRADER_TEMPLATE_SHA256)."""
    template = grader_template() if order == "reference" else shared_prefix_first_template()
    return hashlib.sha256(template.encode("utf-8")).hexdigest()


def unfenced(text: str) -> str:
    """The reference's `re.sub(r"^```json\\s*|\\s*```$", "", text)` of a stripped reply, by
    prefix and suffix (the same text; the pattern tried its second branch at every character,
    ~10 us per 100 characters of every judge reply)."""
    if text.startswith("```json"):
        text = text[len("```json") :].lstrip()
    if text.endswith("```"):
        text = text[: -len("```")].rstrip()
    return text


@dataclass(frozen=True)
class Verdict:
    criteria_met: bool
    explanation: str


def parse_verdict(reply: str) -> Verdict | None:
    """The reference parse: strip ```json fences, json.loads, require a boolean `criteria_met`.

    Returns None for anything else (junk, a string "false", a number, a non-object).
    """
    try:
        parsed = json.loads(unfenced(reply.strip()))
    except json.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    label = parsed.get("criteria_met")
    if label is not True and label is not False:
        return None
    return Verdict(label, str(parsed.get("explanation", "No explanation provided")))


async def grade_criterion(
    judge: Completer,
    conversation: str,
    rubric_item: str,
    max_parse_retries: int,
    rollout: int = 0,
    prefix_key: str | None = None,
    watch: UnparseableWatch | None = None,
    order: str = "reference",
) -> CriterionGrade:
    """Ask the judge until a valid verdict arrives, at most `1 + max_parse_retries` times.

    Each attempt is a fresh sample (its own cache entry), so a resumed run replays the same
    attempts and verdicts. An empty reply counts as an unparseable attempt (it is not cached, so
    a resumed run asks again). `watch` sees every reply (see `verdict_watch`). `order`: the
    template's order (`judge.prompt_order`: "reference" or "shared_prefix_first", see
    `grader_prompt`). A request the budget refused is `not_run`, never ungraded.

    Raises only for errors that should stop the whole run (`endpoint_errors.FatalEndpointError`).
    """
    prompt = grader_prompt(conversation, rubric_item, order)
    messages = [{"role": "user", "content": prompt}]
    attempts = 0
    last_reply = ""
    for attempt in range(1 + max_parse_retries):
        if watch is not None and watch.armed:
            await watch.admit()
        try:
            text = (
                await judge.complete(
                    messages, tag=f"rollout={rollout};attempt={attempt}", prefix_key=prefix_key
                )
            ).text
        except EmptyReply:
            text = ""
        except RequestFailed as exc:
            if watch is not None:
                watch.record(None, False)
            return CriterionGrade(None, "", attempts, error=f"judge request failed: {exc}")
        except BudgetExhausted as exc:
            if watch is not None:
                watch.record(None, False)
            return CriterionGrade(None, "", attempts, error=f"not run: {exc}", not_run=True)
        attempts += 1
        last_reply = text
        verdict = parse_verdict(text) if text else None
        if watch is not None:
            watch.record(text, verdict is not None)
        if verdict is not None:
            return CriterionGrade(verdict.criteria_met, verdict.explanation, attempts)
    snippet = last_reply[:200].replace("\n", " ")
    return CriterionGrade(
        None, "", attempts, error=f"no valid verdict in {attempts} judge replies; last: {snippet!r}"
    )

"""The built-in endpoint's replies: deterministic model replies and judge verdicts, and the
seeded faults injected into them.

A model reply is derived from the model name, temperature and messages; a judge verdict from the
judge's name and the grader prompt, so the same judge always gives the same prompt the same
verdict (the server tells a judge request by `JUDGE_MARKER`, the grader template's first words).
Judges named in `judge_flip_rates` disagree by known rates: each says the prompt's base verdict,
flipped at its own rate (`judge_met`). Judges named in `judge_lenient_rates` are biased: each
starts from the base verdict (flipped at its flip rate, if it has one) and says met where that
says not met, at its own rate (a lenient judge; an independent draw per judge and prompt).
Models named in `model_strengths` have a set strength: their replies end with
`[[offline-model:<name>]]`, and the base verdict on such a reply meets a positive criterion at
the model's share of positive criteria met and a negative one at one minus its share avoided
(a draw per grader prompt, independent of the judges' flips), so a stronger and a weaker model
are graded by judges whose error rates against the base verdict are the same.
`Faults` injects latency, 429/500/503 errors, malformed verdicts and empty replies at the rates of
an `OfflineServerConfig` (seeded), and judge-only faults: verdicts fenced without the `json` label
(which the reference parse rejects), empty verdicts and 500s; a model request whose last message
contains `REFUSE_MARKER` is answered as refused (`finish_reason: content_filter`). Usage is
reported as 4 characters per token; a request with `reasoning_effort` also reports
REASONING_TOKENS reasoning tokens. `reply_tokens` / `verdict_tokens` set the lengths of replies
and verdicts (`sized_reply`, `sized_verdict`), so a cost estimate can be checked against lengths
it does not assume.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from collections.abc import Mapping, Sequence

from healthbench_exp.config.ranges import judge_flip_rates, model_strengths
from healthbench_exp.config.schema import OfflineServerConfig

JUDGE_MARKER = "Your job is to look at a conversation and a rubric item"
REFUSE_MARKER = "[[offline-server:refuse]]"
REASONING_TOKENS = 64
MODEL_MARKER = "[[offline-model:"  # ends the reply of a model of set strength
RUBRIC_HEADER = "# Rubric item\n["  # the grader prompt's rubric item: `[points] text`
Strengths = Mapping[str, tuple[float, float]]
_SENTENCES = (
    "It is best to talk to a doctor or nurse who can examine you.",
    "If symptoms get worse, such as trouble breathing or chest pain, call emergency services.",
    "Drink fluids, rest, and keep track of how your symptoms change over the next days.",
    "Could you tell me how long this has been going on and whether you take any medicines?",
    "Common causes include infections, dehydration and side effects of medication.",
    "This is general information, not a diagnosis.",
    "Over-the-counter pain relief can help, taken as the label directs.",
    "Seek care today if you notice confusion, fainting or a high fever.",
)
_MALFORMED = (
    "I think the response meets the criterion.",
    '```json\n{"explanation": "The verdict is missing."}\n```',
    '{"explanation": "A string is not a boolean.", "criteria_met": "false"}',
    '{"explanation": "truncated", "criteria_met": tr',
)


def _digest(*parts: str) -> bytes:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()


def model_reply(
    model: str,
    temperature: object,
    messages: Sequence[Mapping[str, object]],
    strengths: Strengths | None = None,
) -> str:
    """A deterministic, health-flavoured reply of 1 to 5 sentences; a model of set strength
    (named in `strengths`) ends it with its marker."""
    digest = _digest(model, repr(temperature), json.dumps(messages, sort_keys=True))
    count = 1 + digest[0] % 5
    reply = " ".join(_SENTENCES[digest[1 + i] % len(_SENTENCES)] for i in range(count))
    return f"{reply} {MODEL_MARKER}{model}]]" if model in (strengths or {}) else reply


def sized_reply(reply: str, tokens: int, messages: Sequence[Mapping[str, object]]) -> str:
    """`reply` repeated or cut to about `tokens` tokens (4 characters each), varied per reply
    between half and one and a half times that (seeded by the messages); `tokens` 0: `reply`."""
    if tokens <= 0:
        return reply
    digest = _digest("length", json.dumps(messages, sort_keys=True))
    chars = 4 * tokens * (50 + int.from_bytes(digest[:2]) % 101) // 100
    text = reply
    while len(text) < chars:
        text += " " + reply
    return text[: max(1, chars)].rstrip() or reply[:1]


def sized_verdict(verdict: str, tokens: int) -> str:
    """A verdict of about `tokens` tokens: its explanation padded; `tokens` 0: `verdict`."""
    if tokens <= 0:
        return verdict
    parsed = json.loads(verdict.removeprefix("```json\n").removesuffix("\n```"))
    missing = 4 * tokens - len(verdict)
    if missing > 0:
        filler = " The criterion was checked against the reply."
        parsed["explanation"] += (filler * (1 + missing // len(filler)))[:missing]
    return "```json\n" + json.dumps(parsed, indent=2) + "\n```"


def strength_of(grader_prompt: str, strengths: Strengths) -> tuple[tuple[float, float], float]:
    """((share met, share avoided), the criterion's points) where the prompt grades the reply
    of a model in `strengths`; ValueError where it does not."""
    at = grader_prompt.rfind(MODEL_MARKER)
    name = grader_prompt[at + len(MODEL_MARKER) :].partition("]]")[0] if at >= 0 else ""
    rubric = grader_prompt.rfind(RUBRIC_HEADER)
    if name not in strengths or rubric < 0:
        raise ValueError("not a reply of a model of set strength")
    points = grader_prompt[rubric + len(RUBRIC_HEADER) :].partition("]")[0]
    return strengths[name], float(points)


def base_verdict(grader_prompt: str, strengths: Strengths | None = None) -> bool:
    """The verdict every judge with a flip rate starts from: a hash of the grader prompt alone;
    on the reply of a model of set strength, met at its share for the criterion's sign."""
    try:
        (met, avoided), points = strength_of(grader_prompt, strengths or {})
    except ValueError:
        return _digest(grader_prompt)[0] % 2 == 0
    draw = int.from_bytes(_digest("strength", grader_prompt)[:8], "big") / 2**64
    return draw < met if points > 0 else draw >= avoided


def flip_draw(judge: str, grader_prompt: str) -> float:
    """A uniform draw in [0, 1) per judge and grader prompt: the verdict flips below the rate."""
    return int.from_bytes(_digest(judge, grader_prompt)[:8], "big") / 2**64


def lenient_draw(judge: str, grader_prompt: str) -> float:
    """A uniform draw in [0, 1) per judge and grader prompt, independent of `flip_draw`: a
    lenient judge says met where its verdict was not met and this falls below its rate."""
    return int.from_bytes(_digest("lenient", judge, grader_prompt)[:8], "big") / 2**64


def judge_met(
    grader_prompt: str,
    judge: str,
    flip_rates: Mapping[str, float],
    lenient_rates: Mapping[str, float] | None = None,
    strengths: Strengths | None = None,
) -> bool:
    """The judge's verdict. A judge named in `flip_rates` says `base_verdict` flipped where
    `flip_draw` falls below its rate (so judges at rates 0 and r disagree exactly where the
    second flips, a share of about r); a judge named in `lenient_rates` starts from that (or
    from `base_verdict` without a flip rate) and turns a not met into met where `lenient_draw`
    falls below its rate; any other judge, a hash of its name and the prompt (so two
    differently named judges disagree on about half the items). `strengths`: the models of
    set strength (`base_verdict`)."""
    lenient = lenient_rates or {}
    if judge in lenient:
        flipped = judge in flip_rates
        met = judge_met(grader_prompt, judge, flip_rates, None, strengths) if flipped else None
        met = base_verdict(grader_prompt, strengths) if met is None else met
        return met or lenient_draw(judge, grader_prompt) < lenient[judge]
    if judge in flip_rates:
        flip = flip_draw(judge, grader_prompt) < flip_rates[judge]
        return base_verdict(grader_prompt, strengths) != flip
    return _digest(judge, grader_prompt)[0] % 2 == 0


def judge_reply(
    grader_prompt: str,
    judge: str = "",
    flip_rates: Mapping[str, float] | None = None,
    lenient_rates: Mapping[str, float] | None = None,
    strengths: Strengths | None = None,
) -> str:
    """A verdict in the format the official template asks for (`judge_met`'s)."""
    rates, lenient = flip_rates or {}, lenient_rates or {}
    verdict = {
        "explanation": (
            "Offline verdict: a hash of the grader prompt, flipped at this judge's rate."
            if judge in rates or judge in lenient
            else "Offline verdict derived from a hash of the judge name and grader prompt."
        ),
        "criteria_met": judge_met(grader_prompt, judge, rates, lenient, strengths),
    }
    return "```json\n" + json.dumps(verdict, indent=2) + "\n```"


class Faults:
    """Seeded fault injection (the rates of `settings`) and request counters (one event loop: no
    locks needed)."""

    def __init__(self, settings: OfflineServerConfig, require_key: str | None = None) -> None:
        self.settings = settings  # the rates: see completion_response for how they are drawn
        self.require_key = require_key
        self.rng = random.Random(settings.seed)
        self.flip_rates = judge_flip_rates(settings.judge_flip_rates)
        self.lenient_rates = judge_flip_rates(
            settings.judge_lenient_rates, "offline_server.judge_lenient_rates"
        )
        self.strengths = model_strengths(settings.model_strengths)
        self.prefixes: dict[str, str] = {}
        self.reset()

    def reset(self) -> None:
        self.counts: dict[str, float] = {
            "requests": 0,
            "model_requests": 0,
            "judge_requests": 0,
            "errors_injected": 0,
            "malformed_injected": 0,
            "empty_injected": 0,
            "fenced_injected": 0,
            "judge_empty_injected": 0,
            "judge_errors_injected": 0,
            "in_flight": 0,
            "peak_in_flight": 0,
            "latency_ms_total": 0,  # the injected latency served, summed over requests
            "held_ms_total": 0.0,  # from reading a request to sending its reply, summed
            "first_request_at": 0.0,  # time.time() of the first request (for start-up time)
            "last_reply_at": 0.0,  # time.time() of the latest reply (with the first: busy time)
            "batches_created": 0,
            "batch_requests": 0,
            "rate_limited": 0,  # answered 429 by the rate limiter (not counted in `requests`)
            "quota_refused": 0,
            "silent_held": 0,  # requests accepted and never answered
            "chat_requests": 0,  # chat requests received (`down_after`)
            "outage_failed": 0,  # answered `fail_status` (an outage)
        }

    def prefix_cache_hit(self, key: object, messages: Sequence[Mapping[str, object]]) -> int:
        """Characters of the prompt shared with the previous one under the same
        `prompt_cache_key`: what a provider's prefix cache could have served."""
        if not isinstance(key, str) or not key:
            return 0
        text = "".join(str(m.get("content", "")) for m in messages)
        previous = self.prefixes.get(key, "")
        self.prefixes[key] = text
        if len(self.prefixes) > 10_000:
            self.prefixes.pop(next(iter(self.prefixes)))
        return len(os.path.commonprefix([previous, text]))  # noqa: RUF071 (characters, as a cache)

    def draw(self) -> tuple[float, float]:
        """(delay in seconds, a uniform draw for this request's fault)."""
        latency, jitter = self.settings.latency_ms, self.settings.jitter_ms
        delay = max(0.0, latency + self.rng.uniform(-jitter, jitter))
        self.counts["latency_ms_total"] += round(delay)
        if not self.counts["first_request_at"]:
            self.counts["first_request_at"] = time.time()
        return delay / 1000.0, self.rng.random()

    def count(self, key: str, delta: float = 1) -> None:
        self.counts[key] += delta
        if key == "in_flight":
            self.counts["peak_in_flight"] = max(
                self.counts["peak_in_flight"], self.counts["in_flight"]
            )


def completion_response(
    faults: Faults,
    draw: float,
    model: str,
    body: Mapping[str, object],
    messages: Sequence[Mapping[str, object]],
) -> tuple[int, dict[str, object], dict[str, str] | None]:
    """(status, body, headers) of one chat completion; `draw` picks an injected fault.

    Every request may get an injected 429/500/503 (`error_rate`); the rest of the draw picks,
    for a judge request, a malformed verdict, then a verdict fenced without `json`, an empty one
    or a 500, in that order; for a model request, an empty reply.
    """
    rates = faults.settings
    if draw < rates.error_rate:
        faults.count("errors_injected")
        status = (429, 500, 503)[int(draw * 1_000_003) % 3]
        return (
            status,
            {"error": {"message": f"injected {status}", "type": "injected"}},
            {"retry-after-ms": f"{rates.error_retry_after_ms:g}"},
        )
    draw = (draw - rates.error_rate) / max(1e-12, 1.0 - rates.error_rate)
    last = str(messages[-1].get("content", "")) if messages else ""
    is_judge = JUDGE_MARKER in last
    faults.count("judge_requests" if is_judge else "model_requests")
    if is_judge:
        fenced = rates.malformed_rate + rates.fenced_rate
        empty = fenced + rates.judge_empty_rate
        if draw < rates.malformed_rate:
            faults.count("malformed_injected")
            text = _MALFORMED[int(draw * 1_000_003) % len(_MALFORMED)]
        elif draw < fenced:  # ``` without `json`: the reference parse cannot read it
            faults.count("fenced_injected")
            text = judge_reply(
                last, model, faults.flip_rates, faults.lenient_rates, faults.strengths
            ).replace("```json\n", "```\n", 1)
        elif draw < empty:
            faults.count("judge_empty_injected")
            text = ""
        elif draw < empty + rates.judge_error_rate:
            faults.count("judge_errors_injected")
            return 500, {"error": {"message": "injected judge 500", "type": "injected"}}, None
        else:
            text = sized_verdict(
                judge_reply(last, model, faults.flip_rates, faults.lenient_rates, faults.strengths),
                rates.verdict_tokens,
            )
    elif draw < rates.empty_reply_rate:
        faults.count("empty_injected")
        text = ""
    else:
        text = model_reply(model, body.get("temperature"), messages, faults.strengths)
        text = sized_reply(text, rates.reply_tokens, messages)
    finish_reason = "content_filter" if not is_judge and REFUSE_MARKER in last else "stop"
    prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
    # a request with `reasoning_effort` "thinks" REASONING_TOKENS tokens, billed as output
    reasoning = REASONING_TOKENS if body.get("reasoning_effort") else 0
    cached_chars = faults.prefix_cache_hit(body.get("prompt_cache_key"), messages)
    return (
        200,
        {
            "id": "offline-" + hashlib.sha256(text.encode()).hexdigest()[:12],
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_chars // 4,
                "prompt_tokens_details": {"cached_tokens": cached_chars // 4},
                "completion_tokens": len(text) // 4 + reasoning,
                "completion_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": prompt_chars // 4 + len(text) // 4 + reasoning,
            },
        },
        None,
    )

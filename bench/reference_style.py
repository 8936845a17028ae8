"""The reference implementation's way of running HealthBench, for a side-by-side with the harness.

This is not simple-evals' code. It re-creates what simple-evals' `HealthBenchEval` does in its
process, so that both can be timed on one workload against one server:

- examples run on a thread pool of `--threads` threads (simple-evals: 120), behind a tqdm bar;
- each example samples its reply, then grades its criteria on a new thread pool of
  `os.cpu_count()` threads (the default of simple-evals' `map_with_progress`), so at most
  `threads x cpu_count` requests are in flight (240 with the defaults on 2 cores);
- the model and the grader are two samplers, each with its own synchronous `openai.OpenAI`
  client; every call is `chat.completions.create`, retried on any error; a verdict whose
  `criteria_met` is not a boolean is asked for again;
- the reply gets the system message "You are a helpful assistant.", and so does the grader
  prompt (the official template: the same prompts the harness sends, so the server gives the
  same verdicts);
- `--sampler responses` samples the model as simple-evals' `ResponsesSampler` samples o3 and
  o4-mini (`reasoning_model=True`): `client.responses.create(model=..., input=messages,
  reasoning={"effort": ...} or None)` with no system message, the reply its `output_text`,
  retried on any error but a 400 (an empty reply); the grader is still the chat sampler, and it
  sees the conversation as sent (simple-evals' `actual_queried_message_list`): without a system
  message. `--model` and `--grader-model` name the models sent (default `bench-model`,
  `bench-judge`);
- per example, on its thread: the metrics (overall, example tags, rubric tags with positive
  points), the sorted "[True] criterion / Explanation" lines, and an HTML fragment rendered with
  Jinja2 from templates compiled on every call, as simple-evals' `jinja_env.from_string` does;
- at the end: per metric the clipped mean and a bootstrap of 1,000 resamples drawn with
  `numpy.random.choice` from a Python list, then an HTML report of every example, the metrics
  JSON and the all-results JSON (indented).

`--requests-only` leaves out the per-example and end-of-run work (a lower bound on its time).
Needs `pip install -e ".[bench]"` (Jinja2). It writes {"requests", "evaluation_s", ...} as JSON.

    python bench/reference_style.py --data rows.jsonl --base-url http://127.0.0.1:8000/v1 \
        --threads 128 --out result.json
    python bench/reference_style.py --data rows.jsonl --base-url http://127.0.0.1:8000/v1 \
        --sampler responses --model o3-2025-04-16 --out result.json   # simple-evals' "o3"

`bench/throughput.py --runner reference` runs it with the same workload and server as the harness.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from collections import defaultdict
from multiprocessing.pool import ThreadPool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from healthbench_exp.grading.grader import grader_prompt, render_conversation

SYSTEM_MESSAGE = "You are a helpful assistant."

# Our own templates, of the size and shape of simple-evals' per-example and report HTML.
MESSAGE_HTML = """
<div class="message {{ role }}">
  <div class="role">{{ role }}</div>
  <div class="content"><pre>{{ content }}</pre></div>
</div>
"""
EXAMPLE_HTML = """
<h3>Prompt conversation</h3>
{% for message in prompt %}{{ render_message(message) | safe }}{% endfor %}
<h3>Sampled message</h3>
{{ render_message(reply) | safe }}
<h3>Results</h3>
<p>Extracted Answer: {{ reply.content }}</p>
<p>Score: {{ score }}</p>
<p>Rubrics with grades: {{ grades | safe }}</p>
"""
REPORT_HTML = """<!DOCTYPE html>
<html><head><style>.message { padding: 8px 16px; } pre { white-space: pre-wrap; }</style></head>
<body>
<h1>Metrics</h1>
<table>
<tr><td><b>Score</b></td><td>{{ score | float | round(3) }}</td></tr>
{% for name, value in metrics.items() %}<tr><td>{{ name }}</td><td>{{ value }}</td></tr>{% endfor %}
</table>
<h1>Examples</h1>
{% for html in htmls %}{{ html | safe }}<hr>{% endfor %}
</body></html>
"""


def reply_json(text: str) -> dict[str, Any]:
    """The grader's reply as the reference reads it: code fences dropped, {} if not JSON."""
    text = text.strip().removeprefix("```json").removesuffix("```")
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


# The reference scores raw JSON rows on its own threads; healthbench_exp.grading.scoring takes typed
# criteria, so the re-creation keeps its own two small functions (tests/e2e/test_bench.py checks
# that they give the harness's score).
def example_score(rubrics: list[dict], met: list[bool]) -> float | None:
    possible = sum(r["points"] for r in rubrics if r["points"] > 0)
    if possible == 0:
        return None
    return sum(r["points"] for r, m in zip(rubrics, met, strict=True) if m) / possible


def example_metrics(row: dict, met: list[bool]) -> dict[str, float]:
    """Overall score, each example tag at the overall score, each rubric tag's own score."""
    overall = example_score(row["rubrics"], met)
    assert overall is not None
    metrics = {"overall_score": overall, **{tag: overall for tag in row["example_tags"]}}
    by_tag: dict[str, list[tuple[dict, bool]]] = defaultdict(list)
    for rubric, m in zip(row["rubrics"], met, strict=True):
        for tag in rubric["tags"]:
            by_tag[tag].append((rubric, m))
    for tag, pairs in by_tag.items():
        score = example_score([p[0] for p in pairs], [p[1] for p in pairs])
        if score is not None:
            metrics[tag] = score
    return metrics


class ReportWork:
    """What the reference does besides requests: per-example HTML, end-of-run statistics, files."""

    def __init__(self) -> None:
        import jinja2
        import numpy

        self.numpy = numpy
        self.env = jinja2.Environment(
            loader=jinja2.BaseLoader(),
            undefined=jinja2.StrictUndefined,
            autoescape=jinja2.select_autoescape(["html", "xml"]),
        )
        self.env.globals["render_message"] = self.render_message

    def render_message(self, message: dict[str, str]) -> str:
        template = self.env.from_string(MESSAGE_HTML)  # compiled on every call, as simple-evals
        return template.render(role=message["role"], content=message["content"])

    def example(
        self, row: dict, prompt: list[dict], reply: str, verdicts: list[dict], met: list[bool]
    ) -> dict[str, Any]:
        metrics = example_metrics(row, met)
        lines = [
            f"[{m}] [{r['points']}] {r['criterion']}\n\tExplanation: {v.get('explanation', '')}"
            for r, v, m in zip(row["rubrics"], verdicts, met, strict=True)
        ]
        lines.sort(key=lambda line: line.startswith("[False]"), reverse=True)
        grades = "\n\n" + "\n\n".join(lines)
        html = self.env.from_string(EXAMPLE_HTML).render(
            prompt=prompt,
            reply={"role": "assistant", "content": reply},
            score=metrics["overall_score"],
            grades=grades.replace("\n", "<br>"),
        )
        return {
            "metrics": metrics,
            "html": html,
            "convo": [*prompt, {"role": "assistant", "content": reply}],
            "metadata": {
                "score": metrics["overall_score"],
                "rubric_items": [
                    {**r, "criteria_met": m, "explanation": v.get("explanation", "")}
                    for r, v, m in zip(row["rubrics"], verdicts, met, strict=True)
                ],
                "prompt_id": row["prompt_id"],
                "completion_id": hashlib.sha256((row["prompt_id"] + reply).encode()).hexdigest(),
            },
        }

    def finish(self, results: list[dict[str, Any]], out_dir: Path) -> float:
        """Statistics per metric, then the three files; returns the overall score."""
        np = self.numpy
        values: dict[str, list[float]] = defaultdict(list)
        for result in results:
            for name, value in result["metrics"].items():
                values[name].append(value)

        def clipped_mean(sample: list[float]) -> float:
            return float(np.clip(np.mean(sample), 0, 1))

        metrics: dict[str, float] = {}
        for name, sample in values.items():
            resamples = [np.random.choice(sample, len(sample)) for _ in range(1000)]
            metrics[name] = clipped_mean(sample)
            metrics[f"{name}:n_samples"] = len(sample)
            metrics[f"{name}:bootstrap_std"] = float(
                np.std([clipped_mean(list(s)) for s in resamples])
            )
        score = metrics["overall_score"]
        htmls = [r["html"] for r in results]
        report = self.env.from_string(REPORT_HTML).render(score=score, metrics=metrics, htmls=htmls)
        (out_dir / "report.html").write_text(report)
        (out_dir / "metrics.json").write_text(json.dumps(metrics))
        everything = {
            "score": score,
            "metrics": metrics,
            "htmls": htmls,
            "convos": [r["convo"] for r in results],
            "metadata": {"example_level_metadata": [r["metadata"] for r in results]},
        }
        (out_dir / "allresults.json").write_text(json.dumps(everything, indent=2))
        return score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="HealthBench-schema JSONL")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--threads", type=int, default=120, help="examples in parallel")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--sampler",
        choices=("chat", "responses"),
        default="chat",
        help="chat: ChatCompletionSampler with the system message; responses: ResponsesSampler "
        "as simple-evals makes it for o3 and o4-mini (reasoning model, no system message)",
    )
    parser.add_argument("--model", default="bench-model", help="the model name sent")
    parser.add_argument("--grader-model", default="bench-judge", help="the grader name sent")
    parser.add_argument("--reasoning-effort", default=None, help="responses: reasoning.effort")
    parser.add_argument(
        "--requests-only",
        action="store_true",
        help="leave out the per-example HTML and the end-of-run statistics and files",
    )
    args = parser.parse_args()

    try:
        report = None if args.requests_only else ReportWork()
    except ImportError as exc:
        raise SystemExit(f'{exc}: pip install -e ".[bench]" (or pass --requests-only)') from None
    import openai
    from tqdm import tqdm

    api_key = os.environ.get("OPENAI_API_KEY", "-")
    model_client = openai.OpenAI(base_url=args.base_url, api_key=api_key)
    grader_client = openai.OpenAI(base_url=args.base_url, api_key=api_key)
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    criterion_threads = os.cpu_count() or 10
    requests = 0
    counter = threading.Lock()

    def ask(client: openai.OpenAI, model: str, messages: list[dict[str, str]]) -> str:
        nonlocal requests
        trial = 0
        while True:
            try:
                response = client.chat.completions.create(
                    model=model, messages=messages, temperature=0.5, max_tokens=2048
                )
                content = response.choices[0].message.content
                if content is None:
                    raise ValueError("empty reply")
                with counter:
                    requests += 1
                return content
            except Exception:
                time.sleep(min(2**trial, 30))
                trial += 1

    def ask_responses(client: openai.OpenAI, model: str, messages: list[dict[str, str]]) -> str:
        """simple-evals' ResponsesSampler with reasoning_model=True."""
        nonlocal requests
        trial = 0
        reasoning = {"effort": args.reasoning_effort} if args.reasoning_effort else None
        while True:
            try:
                response = client.responses.create(
                    model=model,
                    input=messages,  # type: ignore[arg-type]
                    reasoning=reasoning,  # type: ignore[arg-type]
                )
                with counter:
                    requests += 1
                return response.output_text
            except openai.BadRequestError:
                return ""
            except Exception:
                time.sleep(min(2**trial, 30))
                trial += 1

    def run_example(row: dict) -> dict[str, Any]:
        if args.sampler == "responses":  # no system message: the messages as the row has them
            prompt = list(row["prompt"])
            reply = ask_responses(model_client, args.model, prompt)
        else:
            prompt = [{"role": "system", "content": SYSTEM_MESSAGE}, *row["prompt"]]
            reply = ask(model_client, args.model, prompt)
        conversation = render_conversation([*prompt, {"role": "assistant", "content": reply}])

        def grade(rubric: dict) -> dict:
            text = grader_prompt(conversation, f"[{rubric['points']}] {rubric['criterion']}")
            messages = [
                {"role": "system", "content": SYSTEM_MESSAGE},
                {"role": "user", "content": text},
            ]
            while True:
                verdict = reply_json(ask(grader_client, args.grader_model, messages))
                if verdict.get("criteria_met") in (True, False):
                    return verdict

        with ThreadPool(min(criterion_threads, len(row["rubrics"]))) as pool:
            verdicts = list(pool.imap(grade, row["rubrics"]))
        met = [v["criteria_met"] is True for v in verdicts]
        if report is None:
            return {"metrics": {"overall_score": example_score(row["rubrics"], met) or 0.0}}
        return report.example(row, prompt, reply, verdicts, met)

    started = time.monotonic()
    with ThreadPool(min(args.threads, len(rows))) as pool:
        results = list(tqdm(pool.imap(run_example, rows), total=len(rows), file=sys.stderr))
    evaluation = time.monotonic() - started
    scores = [r["metrics"]["overall_score"] for r in results]
    score = sum(scores) / len(scores)
    if report is not None:
        score = report.finish(results, args.out.parent)
    args.out.write_text(
        json.dumps(
            {
                "requests": requests,
                "evaluation_s": evaluation,
                "after_evaluation_s": time.monotonic() - started - evaluation,
                "score": score,
            }
        )
    )


if __name__ == "__main__":
    main()

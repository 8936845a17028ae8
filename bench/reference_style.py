"""The reference implementation's way of running HealthBench, for a side-by-side with the harness.

This is not simple-evals' code. It re-creates how simple-evals' `HealthBenchEval` schedules its
requests, so that both can be timed on one workload against one server:

- examples run on a thread pool of `--threads` threads (simple-evals: 120);
- each example samples its reply, then grades its criteria on a new thread pool of
  `os.cpu_count()` threads (the default of simple-evals' `map_with_progress`), so at most
  `threads x cpu_count` requests are in flight (240 with the defaults on 2 cores);
- every call is the synchronous `chat.completions.create` of one shared `openai.OpenAI` client,
  retried on any error; a verdict whose `criteria_met` is not a boolean is asked for again;
- the reply gets the system message "You are a helpful assistant."; the grader prompt is the
  official template (the same prompts the harness sends, so the server gives the same verdicts).

It leaves out what simple-evals does besides requests (an HTML report per example, the
bootstrap), which would only make it slower. It writes {"requests", "evaluation_s"} as JSON.

    python bench/reference_style.py --data rows.jsonl --base-url http://127.0.0.1:8000/v1 \
        --threads 128 --out result.json

`bench/throughput.py --runner reference` runs it with the same workload and server as the harness.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from multiprocessing.pool import ThreadPool
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from healthbench_exp.grading import grader_prompt, parse_verdict, render_conversation

SYSTEM_MESSAGE = "You are a helpful assistant."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="HealthBench-schema JSONL")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--threads", type=int, default=120, help="examples in parallel")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import openai

    client = openai.OpenAI(base_url=args.base_url, api_key=os.environ.get("OPENAI_API_KEY", "-"))
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines()]
    criterion_threads = os.cpu_count() or 10
    requests = 0
    counter = threading.Lock()

    def ask(model: str, messages: list[dict[str, str]], max_tokens: int) -> str:
        nonlocal requests
        trial = 0
        while True:
            try:
                response = client.chat.completions.create(
                    model=model, messages=messages, temperature=0.5, max_tokens=max_tokens
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

    def run_example(row: dict) -> float:
        prompt = [{"role": "system", "content": SYSTEM_MESSAGE}, *row["prompt"]]
        reply = ask("bench-model", prompt, 2048)
        conversation = render_conversation([*prompt, {"role": "assistant", "content": reply}])

        def grade(rubric: dict) -> bool:
            text = grader_prompt(conversation, f"[{rubric['points']}] {rubric['criterion']}")
            messages = [
                {"role": "system", "content": SYSTEM_MESSAGE},
                {"role": "user", "content": text},
            ]
            while True:
                verdict = parse_verdict(ask("bench-judge", messages, 2048))
                if verdict is not None:
                    return verdict.criteria_met

        with ThreadPool(min(criterion_threads, len(row["rubrics"]))) as pool:
            met = list(pool.imap(grade, row["rubrics"]))
        possible = sum(r["points"] for r in row["rubrics"] if r["points"] > 0)
        achieved = sum(r["points"] for r, m in zip(row["rubrics"], met, strict=True) if m)
        return achieved / possible if possible else 0.0

    started = time.monotonic()
    with ThreadPool(min(args.threads, len(rows))) as pool:
        scores = list(pool.imap(run_example, rows))
    evaluation = time.monotonic() - started
    args.out.write_text(
        json.dumps(
            {
                "requests": requests,
                "evaluation_s": evaluation,
                "mean_score": sum(scores) / len(scores),
            }
        )
    )


if __name__ == "__main__":
    main()

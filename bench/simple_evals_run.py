"""Run OpenAI's simple-evals HealthBench, from a checkout you give, on our rows and server.

This is the side-by-side against the reference itself rather than our re-creation of it
(reference_style.py). Nothing of simple-evals is in this repository: `--simple-evals` names a
checkout of https://github.com/openai/simple-evals (at least its healthbench_eval.py, common.py,
types.py and sampler/chat_completion_sampler.py) with its requirements installed (openai,
blobfile, numpy, pandas, jinja2, tqdm, requests).

What runs is simple-evals' own code for `--eval=healthbench`, driven as its simple_evals.py
main() drives it:

- a grader `ChatCompletionSampler(model="gpt-4.1-2025-04-14", system_message=
  OPENAI_SYSTEM_MESSAGE_API, max_tokens=2048)` and a model sampler made the same way (`--model`
  and `--grader-model` change the model names, so that it can send the harness's requests);
- `HealthBenchEval(grader_model=grader, n_threads=--threads)` called on the model sampler;
- the HTML report, the metrics JSON and the indented all-results JSON, written as main() writes
  them, next to `--out` instead of in /tmp.

Two things differ, neither to the reference's cost: `HealthBenchEval`'s module constant
`INPUT_PATH` is set to `--data` (blobfile reads a local path as it reads the URL), and main()'s
other work (importing every eval, making a sampler for each of ~40 models) is left out. Both
samplers' `OpenAI()` clients find the server through OPENAI_BASE_URL, set from `--base-url`.

    python bench/simple_evals_run.py --simple-evals ~/src/simple-evals --data rows.jsonl \
        --base-url http://127.0.0.1:8000/v1 --threads 128 --out result.json

`bench/throughput.py --runner simple-evals --simple-evals DIR` runs it with the same workload
and server as the harness. It writes {"examples", "score", "eval_call_s"} to `--out`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--simple-evals", type=Path, required=True, help="a simple-evals checkout")
    parser.add_argument("--data", type=Path, required=True, help="HealthBench rows (JSONL)")
    parser.add_argument("--base-url", required=True, help="the chat-completions server, .../v1")
    parser.add_argument("--threads", type=int, default=120, help="n_threads (simple-evals: 120)")
    parser.add_argument("--out", type=Path, required=True, help="where the figures go (JSON)")
    parser.add_argument("--model", default="gpt-4.1-2025-04-14", help="the model sampler's model")
    parser.add_argument("--grader-model", default="gpt-4.1-2025-04-14", help="the grader's model")
    args = parser.parse_args()

    checkout = args.simple_evals.resolve()
    if not (checkout / "healthbench_eval.py").is_file():
        raise SystemExit(f"{checkout} has no healthbench_eval.py: not a simple-evals checkout")
    os.environ["OPENAI_BASE_URL"] = args.base_url
    os.environ.setdefault("OPENAI_API_KEY", "offline")
    # simple-evals is a package by its folder's name (`python -m simple-evals.simple_evals`)
    sys.path.insert(0, str(checkout.parent))
    healthbench = importlib.import_module(f"{checkout.name}.healthbench_eval")
    common = importlib.import_module(f"{checkout.name}.common")
    samplers = importlib.import_module(f"{checkout.name}.sampler.chat_completion_sampler")
    healthbench.INPUT_PATH = str(args.data.resolve())

    def sampler(model: str) -> object:
        return samplers.ChatCompletionSampler(
            model=model, system_message=samplers.OPENAI_SYSTEM_MESSAGE_API, max_tokens=2048
        )

    grader, model = sampler(args.grader_model), sampler(args.model)
    evaluation = healthbench.HealthBenchEval(grader_model=grader, n_threads=args.threads)
    started = time.perf_counter()
    result = evaluation(model)
    eval_call_s = time.perf_counter() - started

    # what simple_evals.py's main() writes after each eval
    stem = args.out.parent / "healthbench"
    Path(f"{stem}.html").write_text(common.make_report(result))
    metrics = dict(sorted((result.metrics | {"score": result.score}).items()))
    Path(f"{stem}.json").write_text(json.dumps(metrics, indent=2))
    everything = {
        "score": result.score,
        "metrics": result.metrics,
        "htmls": result.htmls,
        "convos": result.convos,
        "metadata": result.metadata,
    }
    Path(f"{stem}_allresults.json").write_text(json.dumps(everything, indent=2))
    args.out.write_text(
        json.dumps(
            {
                "examples": len(evaluation.examples),
                "score": float(result.score),
                "eval_call_s": eval_call_s,
            }
        )
    )


if __name__ == "__main__":
    main()

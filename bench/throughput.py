"""Throughput benchmark: how close the harness gets to the ideal wall time, and what it costs.

    python bench/throughput.py --n 2000 --latency-ms 500 --jitter-ms 250 --concurrency 256
    python bench/throughput.py --n 2000 --zero-latency --concurrency 64     # CPU per request
    python bench/throughput.py --n 2000 --runner simple-evals --simple-evals ~/src/simple-evals
    python bench/throughput.py --n 2000 --runner reference     # the reference, re-created

Generates N synthetic rows in the HealthBench schema (mean 11.5 criteria, 2 to 48; prompts of
1 to 9 turns, about 800 characters; a third of the points negative), starts the built-in server
with latency L +- J ms, runs `python -m healthbench_exp` against it with at most C requests in
flight (model and judge together), and prints one line of figures per run:

- requests: paid calls (model + judge); wall s: the harness process, start to exit;
- ideal s: max(total request-seconds / C, the longest example's critical path: two calls);
- efficiency: ideal / evaluation wall time (the time from the first request to the last reply);
- CPU ms/req: user + sys time of the harness process / requests;
- peak RSS MB of the harness process; peak in flight as the server saw it;
- mean in flight: requests the server held, averaged over the evaluation time;
- server extra ms: how long the server held a request beyond its injected latency (its own
  overhead, which counts against the efficiency);
- start s: from launching the command to the server receiving its first request.

Under rate limits (`--rate-limit-tokens T` and/or `--rate-limit-requests R` per
`--rate-limit-window-s W`, for every role: OpenAI's token and requests-per-minute limits, as
buckets refilled evenly and full at the start, `x-ratelimit-*` headers, 429 "try again in"):
- refused 429 share: the server's 429s over all the requests it received;
- limit use: of the binding limit (the more used of the two), what the server admitted over
  its level at the first request plus its refill until the last reply;
- limit use evaluation: the same over the harness's whole evaluation time, which also holds
  its own start before the first request (making its HTTP client).
- limit use by bucket: the same for each model's requests and tokens limits.

A flaky provider (`--error-rate S`): share S of the requests answered 429, 500 or 503 at
random, in equal shares, each with `retry-after-ms` `--error-retry-after-ms` (50) and no
rate-limit header (an overloaded provider, not a limit); the line adds the errors the server
injected and the run's score, which equals the clean run's (every request is sent again).

`--limited-role judge` limits the judge's requests alone; `--one-model` asks for one model in
both roles (a model that is also its judge: one limit, as OpenAI keeps one per model);
`--rate-limit-schedule T:S,...` moves the limit (from T s after a model's first request the
account's other jobs spend share S of its refill; the limit use counts what they leave);
`--concurrency 0` keeps the harness's own concurrency defaults. `--rate-limit-bare` sends no
rate-limit header at all (no `x-ratelimit-*`, no `retry-after`, a 429 that names no wait: a
header-less limit, as most OpenAI-compatible servers other than OpenAI's); `--rate-limited-first
N` answers the first N requests so (a burst of 429s at the start).

`--runner simple-evals --simple-evals DIR` runs OpenAI's simple-evals itself from a checkout
(bench/simple_evals_run.py), and `--runner reference` our re-creation of it (reference_style.py:
threads, criteria two at a time on 2 cores, its per-example HTML and end-of-run work unless
`--requests-only`), on the same rows and server, with as many example threads as make C requests
in flight at most. simple-evals counts nothing, so its requests are the server's count and its
evaluation time the server's first request to last reply. `--http-client` picks the harness's
transport; `--set KEY=VALUE` passes any other override to the harness. `--harness-checkout DIR`
times the harness of another checkout (`git worktree add /tmp/before COMMIT`) with this bench,
its options and its server: before and after a change, on one workload.

It prints figures; it asserts nothing. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import healthbench_exp
from healthbench_exp.builtin_endpoint.limits import others_share, parse_schedule
from healthbench_exp.builtin_endpoint.server import ServerProcess, server_args

AXES = [
    "accuracy",
    "completeness",
    "context_awareness",
    "communication_quality",
    "instruction_following",
]
THEMES = ["emergency_referrals", "context_seeking", "global_health", "health_data_tasks",
          "communication", "hedging", "complex_responses"]  # fmt: skip
WORDS = [
    "patient",
    "dose",
    "symptom",
    "fever",
    "pain",
    "doctor",
    "clinic",
    "risk",
    "test",
    "blood",
    "sleep",
    "water",
    "heart",
]


def text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS))
    return " ".join(words)


def synthetic_rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        criteria = min(48, max(2, round(rng.lognormvariate(2.3, 0.5))))
        turns = rng.choice([1, 1, 1, 3, 3, 5, 7, 9])
        prompt = [
            {"role": "user" if t % 2 == 0 else "assistant", "content": text(rng, 800 // turns + 40)}
            for t in range(turns)
        ]
        rubrics = []
        for c in range(criteria):
            points = rng.choice([1, 2, 3, 5, 6, 7, 8, 10])
            if c > 0 and rng.random() < 1 / 3:
                points = -points
            rubrics.append(
                {
                    "criterion": text(rng, rng.randint(60, 220)),
                    "points": points,
                    "tags": ["level:example", f"axis:{rng.choice(sorted(AXES))}"],
                }
            )
        rows.append(
            {
                "prompt_id": f"bench-{i:05d}",
                "prompt": prompt,
                "rubrics": rubrics,
                "example_tags": [f"theme:{THEMES[i % 7]}"],
                "ideal_completions_data": None,
                "canary": "synthetic benchmark row",
            }
        )
    return rows


def server_stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats") as response:
        return json.loads(response.read())


def reset_server(base_url: str) -> None:
    request = urllib.request.Request(base_url.removesuffix("/v1") + "/stats/reset", b"{}")
    urllib.request.urlopen(request).close()


def harness_command(data: Path, args: argparse.Namespace, base_url: str, run_dir: Path) -> list:
    # --concurrency 0: the harness's own defaults (64 model, 256 judge requests, 64 examples)
    caps = args.concurrency > 0
    endpoints = [
        [
            f"{role}=openai_compatible", f"{role}.name={model_name(args, role)}",
            f"{role}.base_url={base_url}",
            *([f"{role}.max_concurrency={args.concurrency}"] if caps else []),
        ]
        for role in ("model", "judge")
    ]  # fmt: skip
    limits = [f"runner.max_in_flight={args.concurrency}",
              f"runner.max_concurrent={args.examples_in_flight}"] if caps else []  # fmt: skip
    return [
        sys.executable, "-m", "healthbench_exp", f"dataset.path={data}", "wandb=disabled",
        *endpoints[0], *endpoints[1], *limits, "runner.progress=false",
        f"runner.http_client={args.http_client}", f"hydra.run.dir={run_dir}", *args.set,
    ]  # fmt: skip


def model_name(args: argparse.Namespace, role: str) -> str:
    """The model a role asks for: `bench-<role>`, or one for both (`--one-model`: a model that
    is also its judge, drawing on one limit, as OpenAI keeps one per model)."""
    return "bench-one" if getattr(args, "one_model", False) else f"bench-{role}"


def example_threads(args: argparse.Namespace) -> int:
    """The reference's example threads for at most C requests in flight: each example grades its
    criteria on `os.cpu_count()` threads (simple-evals' `map_with_progress` default)."""
    return max(1, args.concurrency // (os.cpu_count() or 10))


def reference_command(data: Path, args: argparse.Namespace, base_url: str, run_dir: Path) -> list:
    threads = example_threads(args)
    return [
        sys.executable, str(Path(__file__).with_name("reference_style.py")), f"--data={data}",
        f"--base-url={base_url}", f"--threads={threads}", f"--out={run_dir / 'result.json'}",
        *(["--requests-only"] if args.requests_only else []),
    ]  # fmt: skip


def simple_evals_command(
    data: Path, args: argparse.Namespace, base_url: str, run_dir: Path
) -> list:
    threads = example_threads(args)
    return [
        sys.executable, str(Path(__file__).with_name("simple_evals_run.py")),
        f"--simple-evals={args.simple_evals}", f"--data={data}", f"--base-url={base_url}",
        f"--threads={threads}", f"--out={run_dir / 'result.json'}",
        "--model=bench-model", "--grader-model=bench-judge",  # the harness's requests, exactly
    ]  # fmt: skip


DEFAULT_IN_FLIGHT = 64 + 256  # the harness's defaults: model and judge max_concurrency

COMMANDS = {
    "harness": harness_command,
    "reference": reference_command,
    "simple-evals": simple_evals_command,
}


def refill_share(schedule: list[tuple[float, float]], span: float) -> float:
    """The share of a bucket's refill over its first `span` seconds left to the run, under the
    server's `--rate-limit-schedule` (the account's other jobs spending the rest)."""
    if not schedule or span <= 0:
        return 1.0
    steps = 1000
    return sum(1 - others_share(schedule, (i + 0.5) * span / steps) for i in range(steps)) / steps


def limit_figures(before: dict, stats: dict, evaluation: float, schedule_text: str = "") -> dict:
    """Under the server's rate limits (each model its own, as OpenAI's): the share of requests
    refused with 429, and the share of what the limits allowed that was used, for the most used
    limit (the binding one: requests or tokens, of the model or the judge): admitted over the
    bucket's level at the model's first request plus its refill until the last reply
    (`limit_use`: what the pacing controls), and plus its refill over the harness's whole
    evaluation time instead (`limit_use_evaluation`: also counts the harness's own start
    before its first request, such as making its HTTP client). A model the server had limited
    before this run (a shared server, `--reuse-cache`) counts from the run's first request,
    at its bucket's level then."""
    refused = stats["rate_limited"]
    schedule = parse_schedule(schedule_text)
    uses, uses_evaluation = [], []
    buckets: dict[str, float] = {}  # each model's limits: the share used
    for model, now in stats["limit_models"].items():
        then = before["limit_models"].get(model)
        first = stats["first_request_at"] if then else now["first_request_at"]
        sending = max(0.0, stats["last_reply_at"] - first)
        waited = max(0.0, first - before["read_at"])
        for kind in ("requests", "tokens"):
            if f"limit_{kind}_per_s" not in stats:
                continue
            per_s, capacity = stats[f"limit_{kind}_per_s"], stats[f"limit_{kind}_capacity"]
            level = (then or {}).get(f"limit_{kind}_level", capacity)
            start_level = min(capacity, level + per_s * waited)
            admitted = now[f"limited_{kind}"] - (then or {}).get(f"limited_{kind}", 0)
            ours = refill_share(schedule, sending)  # what the account's other jobs leave
            uses.append(admitted / (start_level + per_s * sending * ours))
            longest = max(evaluation, sending)
            ours = refill_share(schedule, longest)
            uses_evaluation.append(admitted / (start_level + per_s * longest * ours))
            buckets[f"{model} {kind}"] = uses[-1]
    sent = stats["requests"] + refused
    return {
        "refused_429_share": refused / max(1, sent),
        "limit_use": max(uses, default=0.0),
        "limit_use_evaluation": max(uses_evaluation, default=0.0),
        "buckets": buckets,
    }


def run_once(data: Path, args: argparse.Namespace, work: Path, server: ServerProcess) -> dict:
    latency = 0.0 if args.zero_latency else args.latency_ms
    jitter = 0.0 if args.zero_latency else args.jitter_ms
    run_dir = work / f"run-{time.monotonic_ns()}"
    run_dir.mkdir()
    cache = work / ("cache" if args.reuse_cache else f"cache-{time.monotonic_ns()}")
    reset_server(server.base_url)  # one server for all repeats: its URL is in the cache key
    before = {**server_stats(server.base_url), "read_at": time.time()}
    build = COMMANDS[args.runner]
    started = time.time()
    # stderr to a file, not a pipe: a progress bar could fill the pipe and stall the run
    log = work / f"{run_dir.name}.stderr.txt"  # beside the run folder, which the harness owns
    with log.open("w") as stderr:
        process = subprocess.Popen(
            build(data, args, server.base_url, run_dir), stdout=subprocess.DEVNULL,
            stderr=stderr, env={**harness_environment(args), "HEALTHBENCH_CACHE_DIR": str(cache)},
            cwd=harness_checkout(args),
        )  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.time() - started
    if status != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(f"{args.runner} failed ({status}):\n{tail}")
    stats = server_stats(server.base_url)
    ungraded = 0
    score = float("nan")
    if args.runner == "harness":
        summary = json.loads((run_dir / "summary.json").read_text())
        counts, score = summary["counts"], summary["metrics"]["overall_score"]
        requests = counts["model_requests"] + counts["judge_requests"]
        ungraded = counts["ungraded_criteria"]
        evaluation = counts.get("evaluation_s") or wall
    elif args.runner == "reference":
        result = json.loads((run_dir / "result.json").read_text())
        requests, evaluation = result["requests"], result["evaluation_s"]
    else:  # simple-evals counts nothing: the server's count, its first request to last reply
        requests = stats["requests"]
        evaluation = stats["last_reply_at"] - stats["first_request_at"]
    request_seconds = stats["latency_ms_total"] / 1000
    ideal = max(
        request_seconds / (args.concurrency or DEFAULT_IN_FLIGHT), 2 * (latency + jitter) / 1000
    )
    schedule = getattr(args, "rate_limit_schedule", "")
    limited = limit_figures(before, stats, evaluation, schedule) if limits_of(args) else {}
    if args.runner == "harness" and limited:
        limited["ungraded"] = ungraded
    return {
        **limited,
        "score": score,
        "errors_injected": stats.get("errors_injected", 0),
        "requests": requests,
        "wall_s": wall,
        "evaluation_s": evaluation,
        "ideal_s": ideal,
        "efficiency": ideal / evaluation if evaluation and requests else float("nan"),
        "cpu_ms_per_request": 1000 * (usage.ru_utime + usage.ru_stime) / max(1, requests),
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "peak_in_flight": stats["peak_in_flight"],
        # requests the server held, on average over the evaluation: C x efficiency, less the
        # server's own delay beyond the injected latency (server_extra_ms per request)
        "mean_in_flight": stats["held_ms_total"] / 1000 / evaluation if evaluation else 0.0,
        "server_extra_ms": (stats["held_ms_total"] - stats["latency_ms_total"])
        / max(1, stats["requests"]),
        "start_s": (stats["first_request_at"] - started)
        if stats["first_request_at"]
        else float("nan"),
    }


def user_environment() -> dict[str, str]:
    """This environment as a user's machine has it: Python caches compiled modules (some
    containers set PYTHONDONTWRITEBYTECODE, which makes every run recompile the package, about
    0.3 s of CPU that no installed harness spends)."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def harness_checkout(args: argparse.Namespace) -> Path | None:
    """The checkout whose harness `--runner harness` runs (`--harness-checkout`), or None for
    this one: the run starts in it, so `python -m healthbench_exp` imports its package."""
    checkout = getattr(args, "harness_checkout", None)
    return Path(checkout).resolve() if checkout and args.runner == "harness" else None


def harness_environment(args: argparse.Namespace) -> dict[str, str]:
    """The run's environment: the user's, with PYTHONPATH at `--harness-checkout` when given
    (so the harness of another commit is timed by this bench, on this bench's server)."""
    checkout = harness_checkout(args)
    environment = user_environment()
    return environment if checkout is None else {**environment, "PYTHONPATH": str(checkout)}


def compile_package(checkout: Path | None = None) -> None:
    """Write the package's bytecode once, before the first run, so every repeat starts alike
    (an editable install writes it on its first run; a wheel's install writes it up front):
    the package of `checkout`, or this one's."""
    here = Path(healthbench_exp.__file__).parent
    package = here if checkout is None else checkout / "healthbench_exp"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def limits_of(args: argparse.Namespace) -> dict:
    """The server's rate limits (OpenAI-style buckets, x-ratelimit-* headers), for all roles."""
    # callers that build their own Namespace (bench/wandb_overhead.py, tests) may leave them out
    tokens = getattr(args, "rate_limit_tokens", None)
    requests = getattr(args, "rate_limit_requests", None)
    first = getattr(args, "rate_limited_first", 0)
    if not (tokens or requests or first):
        return {}
    return {
        "rate_limit_tokens": tokens or 0,
        "rate_limit_requests": requests or 0,
        "rate_limit_window_s": args.rate_limit_window_s,
        "limited_role": getattr(args, "limited_role", "all"),
        "rate_limit_schedule": getattr(args, "rate_limit_schedule", ""),
        "rate_limit_bare": getattr(args, "rate_limit_bare", False),
        "rate_limited_first": first,
    }


def flaky_of(args: argparse.Namespace) -> dict:
    """A flaky provider's faults (`--error-rate`): random 429/500/503 with a short
    `retry-after-ms` and no rate-limit header; {} for none."""
    share = getattr(args, "error_rate", 0.0)
    if not share:
        return {}
    return {"error_rate": share, "error_retry_after_ms": args.error_retry_after_ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="synthetic examples")
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--jitter-ms", type=float, default=250.0)
    parser.add_argument("--zero-latency", action="store_true", help="L = J = 0 (CPU per request)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=256,
        help="C: requests in flight at most (0: the harness's defaults)",
    )
    parser.add_argument("--examples-in-flight", type=int, default=512, help="runner.max_concurrent")
    parser.add_argument("--repeat", type=int, default=1, help="runs; the median is printed last")
    parser.add_argument("--reuse-cache", action="store_true", help="share one cache across repeats")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--runner",
        choices=sorted(COMMANDS),
        default="harness",
        help="reference: our re-creation of the reference implementation (reference_style.py);"
        " simple-evals: the reference itself, from --simple-evals (simple_evals_run.py)",
    )
    parser.add_argument(
        "--simple-evals", type=Path, metavar="DIR",
        help="with --runner simple-evals: a checkout of github.com/openai/simple-evals",
    )  # fmt: skip
    parser.add_argument(
        "--requests-only", action="store_true",
        help="with --runner reference: leave out its per-example HTML and end-of-run work",
    )  # fmt: skip
    parser.add_argument(
        "--harness-checkout", type=Path, metavar="DIR",
        help="with --runner harness: time the harness of another checkout (e.g. a `git worktree`"
        " of an older commit) with this bench and server: before and after, one workload",
    )  # fmt: skip
    parser.add_argument("--http-client", choices=["aiohttp", "httpx", "direct"], default="aiohttp")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="another override for the harness (repeatable), e.g. --set cache.enabled=false",
    )  # fmt: skip
    parser.add_argument(
        "--rate-limit-tokens", type=int, default=0, help="tokens per window (TPM); 0: none"
    )
    parser.add_argument(
        "--rate-limit-requests", type=int, default=0,
        help="requests per window (RPM; the headers give it per minute); 0: none",
    )  # fmt: skip
    parser.add_argument("--rate-limit-window-s", type=float, default=60.0)
    parser.add_argument(
        "--rate-limit-schedule", default="", metavar="T:S,...",
        help="a limit that moves: from T s after a model's first request, the account's other "
        "jobs spend share S of its refill",
    )  # fmt: skip
    parser.add_argument(
        "--rate-limit-bare", action="store_true",
        help="the limiter sends no rate-limit header (no x-ratelimit-*, no retry-after), as "
        "most OpenAI-compatible servers",
    )  # fmt: skip
    parser.add_argument(
        "--rate-limited-first", type=int, default=0, metavar="N",
        help="answer the first N requests 429 without any rate-limit header (a burst)",
    )  # fmt: skip
    parser.add_argument(
        "--error-rate", type=float, default=0.0, metavar="SHARE",
        help="a flaky provider: this share of requests answered 429, 500 or 503 at random "
        "(equal shares), each with retry-after-ms --error-retry-after-ms and no rate-limit header",
    )  # fmt: skip
    parser.add_argument("--error-retry-after-ms", type=float, default=50.0)
    parser.add_argument(
        "--one-model", action="store_true",
        help="the model is also its judge: both roles ask for one model (one limit)",
    )  # fmt: skip
    parser.add_argument(
        "--limited-role", choices=["all", "model", "judge"], default="all",
        help="whose requests the rate limits apply to",
    )  # fmt: skip
    args = parser.parse_args()
    if args.runner == "simple-evals" and not args.simple_evals:
        parser.error("--runner simple-evals needs --simple-evals DIR (a simple-evals checkout)")
    if args.runner == "harness":
        compile_package(harness_checkout(args))
    work = Path(tempfile.mkdtemp(prefix="hb-bench-"))
    data = work / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in synthetic_rows(args.n, args.seed)))
    latency = "0" if args.zero_latency else f"{args.latency_ms:g}+-{args.jitter_ms:g}"
    runner = f"harness, {args.http_client}" if args.runner == "harness" else args.runner
    if harness_checkout(args):
        runner += f", from {harness_checkout(args)}"
    print(f"N={args.n} L={latency} ms C={args.concurrency} {runner}  (work dir {work})")
    header = ["requests", "wall_s", "evaluation_s", "ideal_s", "efficiency",
              "cpu_ms_per_request", "peak_rss_mb", "peak_in_flight", "mean_in_flight",
              "server_extra_ms", "start_s"]  # fmt: skip
    if limits_of(args):
        header += ["refused_429_share", "limit_use", "limit_use_evaluation"]
    if flaky_of(args):  # the errors the server injected
        header += ["errors_injected"]
    if args.runner == "harness":  # the run's score: a flaky provider's equals a clean run's
        header += ["score"]
    print("run  " + "  ".join(f"{h:>12}" for h in header))
    results = []
    latency = 0.0 if args.zero_latency else args.latency_ms
    jitter = 0.0 if args.zero_latency else args.jitter_ms
    settings = server_args(
        latency_ms=latency, jitter_ms=jitter, **limits_of(args), **flaky_of(args)
    )
    # under rate limits each run gets a server of its own (every model's buckets full, as a
    # fresh account's), unless the runs share a cache (its key holds the server's URL)
    fresh = bool(limits_of(args)) and not args.reuse_cache
    server = ServerProcess(settings).__enter__()
    try:
        for i in range(args.repeat):
            if fresh and i > 0:
                server.stop()
                server = ServerProcess(settings).__enter__()
            result = run_once(data, args, work, server)
            results.append(result)
            print(f"{i + 1:<4} " + "  ".join(f"{result[h]:>12.3f}" for h in header), flush=True)
            if result.get("buckets"):
                used = ", ".join(f"{name} {use:.3f}" for name, use in result["buckets"].items())
                graded = (
                    f"; criteria ungraded: {result['ungraded']}" if "ungraded" in result else ""
                )
                print(f"     limit use by bucket: {used}{graded}", flush=True)
    finally:
        server.stop()
    if args.reuse_cache and len(results) > 1:
        ratio = statistics.median(r["wall_s"] for r in results[1:]) / results[0]["wall_s"]
        print(f"re-runs answered from the cache took {ratio:.1%} of the first run's wall time")
    if args.repeat > 1:
        medians = {h: statistics.median(r[h] for r in results) for h in header}
        print("med  " + "  ".join(f"{medians[h]:>12.3f}" for h in header))


if __name__ == "__main__":
    main()

"""Derive `healthbench_exp/published/published.csv` from the gathered `published.csv`.

The gathered file (`../shared/published/published.csv`, 528 rows) keeps each source's words; this
script keeps every one of its columns and adds the typed columns the comparison reads, each
parsed from those words by the rules below (nothing is guessed: a setting the words do not state
stays empty, i.e. "not stated"):

- `set` / `metric`: the four sets by name; `consensus:cluster:<c>` -> consensus, `cluster:<c>`;
  a variant (`hard (MEDIC variant)`, `all (medarc-eval)`, the GPT-5 card's error-rate subsets,
  the meta-eval) -> set `other` or `meta_eval`, never compared; a length-adjusted row's metric is
  `length_adjusted_score`, else `overall_score`.
- `model_id`: the snapshot the row is of, from `MODEL_IDS` (written out row name by row name;
  a name not listed, such as a ChatGPT checkpoint or a product, has none and is never matched).
- `uncertainty_kind` / `uncertainty_value` / `runs`: `std X over N runs` (runs_std), `bootstrap
  std X (1 run)` (bootstrap_std), `N trials` in the settings (runs N); else none.
- `grader_model` / `grader_effort`: only where the grader is stated (not "presumed").
- `length_adjusted`: `true` where the settings say length-adjusted, `false` where they say
  unadjusted or the source predates length adjustment (2026-04-22, simple-evals PR #108),
  else empty (not stated).
- `temperature`, `max_tokens`, `reasoning_effort`, `api`: where the settings state them.
- `source_title`: the source's title (rows whose gathered URL is a title carry no URL).
- `checked`: `unchecked` (the rows were not re-read against their sources here: no network).

Run: python bench/published_derive.py ../shared/published/published.csv
"""

from __future__ import annotations

import argparse
import csv
import re
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "healthbench_exp" / "published" / "published.csv"
LENGTH_ADJUSTMENT_FROM = "2026-04-22"  # simple-evals PR #108: the first length-adjusted scores

MODEL_IDS = {
    "o3 (o3-2025-04-16)": "o3-2025-04-16",
    "o3": "o3-2025-04-16",
    "OpenAI o3 (re-run in GPT-5 card)": "o3-2025-04-16",
    "OpenAI o3": "o3-2025-04-16",
    "GPT-4.1 (gpt-4.1-2025-04-14)": "gpt-4.1-2025-04-14",
    "GPT-4.1": "gpt-4.1-2025-04-14",
    "o1": "o1-2024-12-17",
    "OpenAI o1": "o1-2024-12-17",
    "GPT-4o (Aug 2024; gpt-4o-2024-08-06)": "gpt-4o-2024-08-06",
    "GPT-4o (Aug 2024)": "gpt-4o-2024-08-06",
    "GPT-3.5 Turbo (gpt-3.5-turbo-0125)": "gpt-3.5-turbo-0125",
    "GPT-3.5 Turbo": "gpt-3.5-turbo-0125",
    "OpenAI o4-mini (re-run in GPT-5 card)": "o4-mini-2025-04-16",
    "OpenAI o4-mini": "o4-mini-2025-04-16",
    "Grok 3": "grok-3",
    "Gemini 2.5 Pro (Mar 2025)": "gemini-2.5-pro-preview-03-25",
    "Claude 3.7 Sonnet (extended thinking)": "claude-3-7-sonnet-20250219",
    "Claude 3.7 Sonnet": "claude-3-7-sonnet-20250219",
    "Llama 4 Maverick": "llama-4-maverick-17b-128e-instruct",
    "gpt-5-thinking": "gpt-5-2025-08-07",
    "GPT-5 (user reproduction)": "gpt-5-2025-08-07",
    "GPT-5": "gpt-5-2025-08-07",
    "gpt-5-thinking-mini (API gpt-5-mini)": "gpt-5-mini-2025-08-07",
    "gpt-5-thinking-mini": "gpt-5-mini-2025-08-07",
    "gpt-oss-120b": "gpt-oss-120b",
    "gpt-oss-20b": "gpt-oss-20b",
    "Baichuan-M2-32B": "baichuan-m2-32b",
    "baichuan-m2": "baichuan-m2-32b",
    "Qwen3-235B-A22B-Thinking-2507": "qwen3-235b-a22b-thinking-2507",
    "DeepSeek-R1-0528": "deepseek-r1-0528",
    "GLM-4.5": "glm-4.5",
    "Kimi-K2": "kimi-k2-instruct",
    "II-Medical-8B-1706": "ii-medical-8b-1706",
    "GPT-5.4 Thinking": "gpt-5.4-2026-03-05",
    "GPT-5.4 (base)": "gpt-5.4-2026-03-05",
    "GPT-5.4 (xhigh)": "gpt-5.4-2026-03-05",
    "GPT-5.5": "gpt-5.5",
    "GPT-5.6 Sol (July)": "gpt-5.6-sol",
    "GPT-5.6 Terra (July)": "gpt-5.6-terra",
    "GPT-5.6 Luna (July)": "gpt-5.6-luna",
    "GPT-6.1 Sol": "gpt-6.1-sol",
    "GPT-6 Astra": "gpt-6-astra",
    "GPT-6 Sol": "gpt-6-sol",
    "GPT-6 Luna": "gpt-6-luna",
    "Llama3-Med42-70B (med42-v2-70b)": "llama3-med42-70b",
    "Qwen2.5-72B-Instruct": "qwen2.5-72b-instruct",
}

TITLES = {
    "https://arxiv.org/abs/2505.08775": "HealthBench: Evaluating Large Language Models Towards "
    "Improved Human Health (Arora et al., OpenAI)",
    "https://cdn.openai.com/gpt-5-system-card.pdf": "GPT-5 System Card (OpenAI)",
    "https://github.com/baichuan-inc/Baichuan-M2-32B": "Baichuan-M2-32B README (Baichuan)",
    "https://benchmarklist.pages.dev/benchmarks/healthbench_hard/": "benchmarklist: "
    "HealthBench Hard (MEDIC import)",
    "https://github.com/m42-health/healthbench": "m42-health/healthbench results",
    "https://huggingface.co/datasets/bwarner/inference-scratch-llm/blob/main/winrate/"
    "latest.csv": "bwarner/inference-scratch-llm winrate/latest.csv (medarc-eval)",
    "https://arxiv.org/abs/2509.02594": "DR.INFO paper (arXiv 2509.02594v2)",
    "https://arxiv.org/abs/2604.27470": "HealthBench Professional (arXiv 2604.27470)",
    "https://www-cdn.anthropic.com/2f9323abbcc4abe219577539efe19a623c9ca2bd/Claude%20Fable%205%20&"
    "%20Claude%20Mythos%205%20System%20Card.pdf": "Claude Fable 5 & Claude Mythos 5 System Card "
    "(Anthropic)",
    "https://github.com/IraLeeBell/models/blob/main/models/BENCHMARKS.md": "IraLeeBell/models "
    "BENCHMARKS.md",
    "https://www.startuphub.ai/ai-news/ai-research/2026/muse-spark-vs-gpt-5-4-vs-claude-vs-gemini"
    "-2026": "startuphub.ai: Muse Spark vs GPT-5.4 vs Claude vs Gemini",
    "https://deploymentsafety.openai.com/gpt-6-astra/gpt-6-astra.pdf": "GPT-6 Astra System Card "
    "(OpenAI)",
    "https://deploymentsafety.openai.com/gpt-5-4-thinking/gpt-5-4-thinking.pdf": "GPT-5.4 "
    "Thinking System Card (OpenAI)",
    "https://huggingface.co/Intelligent-Internet/II-Medical-8B-1706": "II-Medical-8B-1706 model "
    "card (Intelligent Internet)",
    "https://llm-stats.com/benchmarks/healthbench-hard": "llm-stats: HealthBench Hard",
    "https://github.com/openai/simple-evals/issues/96": "openai/simple-evals issue #96 (can not "
    "reproduce 0.67 on gpt-5)",
}

SETS = ("all", "hard", "consensus", "professional")
EFFORTS = ("lowest", "minimal", "low", "medium", "high", "xhigh", "max")
NEW_COLUMNS = [
    "model_id", "set", "metric", "approximate", "uncertainty_kind", "uncertainty_value", "runs",
    "grader_model", "grader_effort", "length_adjusted", "temperature", "max_tokens",
    "reasoning_effort", "api", "source_title", "checked",
]  # fmt: skip


def before_adjustment(date: str) -> bool:
    """Whether a source of `date` (YYYY, YYYY-MM or YYYY-MM-DD) predates length adjustment."""
    month = LENGTH_ADJUSTMENT_FROM[:7]
    same_month_before = len(date) == 10 and date < LENGTH_ADJUSTMENT_FROM
    return date[:7] < month or (date[:7] == month and same_month_before)


def derive(row: dict[str, str]) -> dict[str, str]:
    """The typed columns of one gathered row (see the module docstring)."""
    subset, settings, grader = row["subset"], row["settings"], row["grader"]
    out = dict.fromkeys(NEW_COLUMNS, "")
    out["model_id"] = MODEL_IDS.get(row["model"], "")
    dated = row["date"]
    adjusted = "length-adjusted" in settings
    if adjusted:
        out["length_adjusted"] = "true"
    elif "unadjusted" in settings or before_adjustment(dated):
        out["length_adjusted"] = "false"
    if subset in SETS:
        out["set"] = subset
        out["metric"] = "length_adjusted_score" if adjusted else "overall_score"
    elif subset.startswith("consensus:cluster:"):
        out["set"], out["metric"] = "consensus", subset.removeprefix("consensus:")
    elif subset.startswith("meta"):
        out["set"], out["metric"] = "meta_eval", subset
    else:
        out["set"], out["metric"] = "other", subset
    out["approximate"] = "true" if row["value"].startswith("~") else "false"
    uncertainty = row["uncertainty"]
    if m := re.match(r"std ([0-9.]+) over (\d+) runs", uncertainty):
        out["uncertainty_kind"], out["uncertainty_value"], out["runs"] = "runs_std", *m.groups()
    elif m := re.match(r"bootstrap std ([0-9.]+) \((\d+) run\)", uncertainty):
        out["uncertainty_kind"], out["uncertainty_value"], out["runs"] = (
            "bootstrap_std",
            *m.groups(),
        )
    else:
        out["uncertainty_kind"] = "none"
    if m := re.search(r"(\d+) trials", settings):
        out["runs"] = m.group(1)
    elif "five-trial" in settings:
        out["runs"] = "5"
    if "presumed" not in grader:
        if grader.startswith("gpt-4.1-2025-04-14") or grader.startswith("GPT-4.1"):
            out["grader_model"] = "gpt-4.1-2025-04-14"
        elif grader.startswith("gpt-5.4-2026-03-05, low") or (
            grader.startswith("gpt-5.4 low (Professional)") and subset == "professional"
        ):
            out["grader_model"], out["grader_effort"] = "gpt-5.4-2026-03-05", "low"
        elif grader.startswith("Claude Opus 4.8"):
            out["grader_model"] = "claude-opus-4.8"
        elif grader.startswith("Grok 4.6 (high)"):
            out["grader_model"], out["grader_effort"] = "grok-4.6", "high"
        elif grader.startswith("Qwen2.5-72B"):
            out["grader_model"] = "qwen2.5-72b-instruct (local)"
        elif grader.startswith("MEDIC judge"):
            out["grader_model"] = "medic-judge"
    if "not stated for HealthBench" in settings:
        pass  # the README's sampling note is about its other benchmarks
    elif "temperature 1.0 for OpenAI models" in settings or "temp 1.0" in settings:
        out["temperature"] = "1.0"
    elif (m := re.search(r"temp ([0-9.]+),", settings)) and "judge" not in settings:
        out["temperature"] = m.group(1)
    if m := re.search(r"(\d+) max tokens", settings):
        out["max_tokens"] = m.group(1)
    for effort in EFFORTS:
        if f"{effort} effort" in settings or f"({effort})" in row["model"]:
            out["reasoning_effort"] = effort
            break
    url = row["source_url"]
    out["source_title"] = TITLES.get(url, url)
    out["checked"] = "unchecked"
    return out


def main(source: Path) -> None:
    with source.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    columns = list(rows[0])
    with OUT.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns + NEW_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            derived = derive(row)
            if not row["source_url"].startswith("http"):
                row = {**row, "source_url": ""}  # the gathered URL column held the title
            writer.writerow({**row, **derived})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description="Derive healthbench_exp/published/published.csv from the gathered CSV."
    )
    parser.add_argument("source", type=Path, help="the gathered published.csv")
    main(parser.parse_args().source)

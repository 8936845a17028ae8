"""Write the generated tables of docs/configuration.md from the schema and the presets.

    python docs/generate_configuration.py           # rewrite the tables in docs/configuration.md
    python docs/generate_configuration.py --check   # exit 1 when the page differs from them

Two blocks of the page are generated, each between its marker comments
(`<!-- generated: NAME begin -->` ... `<!-- generated: NAME end -->`); the prose around them is
written by hand and kept as it is:

- `groups`: every config group of `healthbench_exp/conf/` with its options (the default one
  first, from `conf/config.yaml`), and every model and judge preset with its model id, whether it
  is a reasoning model, its prices, its shutdown date and the presets to use instead;
- `keys`: every key of the schema (`healthbench_exp/config/schema.py`), its type, its value in
  the default config (`python -m healthbench_exp` with no override) and the schema's comment on it.

tests/docs/test_docs.py fails when the page differs from what this script writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import io
import re
import sys
import tokenize
import types
import typing
from pathlib import Path

import yaml

from healthbench_exp import load_config
from healthbench_exp.config import schema

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "configuration.md"
CONF = REPO / "healthbench_exp" / "conf"
# the modules whose dataclasses make up the schema (config.schema re-exports the others)
SCHEMA_FILES = sorted(Path(schema.__file__).parent.glob("*.py"))
COMMAND = "python docs/generate_configuration.py"
GROUPS = (
    "model", "judge", "difficulty", "sampling", "task", "completions", "wandb", "experiment",
    "hydra/launcher",
)  # fmt: skip
HIDDEN = {"jury_members"}  # composed by the CLI, never set by hand
ENDPOINT_FIELDS = {f.name for f in dataclasses.fields(schema.EndpointConfig)}
# the meaning of the fields the schema leaves uncommented (a field's own comment wins)
MEANING = {
    ("TaskConfig", "kind"): "what a run measures: the benchmark, or the judge against physicians",
    ("TaskConfig", "meta_eval_sha256"): "checksum of `task.meta_eval_file`",
    ("CompletionsConfig", "source"): "whose replies an eval grades",
    ("PriceConfig", "input_per_mtok"): "prompt tokens; null: unknown, no cost computed",
    ("RateLimitConfig", "requests_per_minute"): "the account's limit, if known: the run "
    "starts at that pace and a dry run prints the least time the calls take",
    ("ServeConfig", "kind"): "a server the run starts itself for this endpoint",
    ("EndpointConfig", "shutdown_source"): "where and when the shutdown date was read",
    ("EndpointConfig", "replacements"): "presets to use instead once it shuts down",
    ("JudgeConfig", "temperature"): "the judge's sampling temperature; null: not sent",
    ("JudgeConfig", "max_tokens"): "the judge's reply limit; null: not sent",
    ("JudgeConfig", "prompt_order"): "`shared_prefix_first` is NOT the reference protocol: "
    "the rubric item after the instructions, one prefix shared by an example's judge calls",
    ("JudgeConfig", "batch_poll_s"): "seconds between polls of a submitted batch",
    ("DatasetConfig", "source"): "`openai`: the official simple-evals file; `hf`: the Hugging "
    "Face dataset `hf_repo`; `bundled`: a synthetic sample",
    ("DatasetConfig", "hf_repo"): "`source=hf`: the dataset's repository",
    ("DatasetConfig", "hf_split"): "`source=hf`: its split",
    ("DatasetConfig", "sha256"): "checksum of the official file",
    ("RunnerConfig", "dead_endpoint_s"): "give an endpoint up when at least 3 attempts failed "
    "and none succeeded for so long (since its last success, or its first call); 0: never",
    ("OfflineServerConfig", "fail_after"): "requests of limited_role answered before the "
    "outage (`fail_status`)",
    ("RunnerConfig", "bootstrap_samples"): "resamples for `:bootstrap_std`",
    ("RunnerConfig", "progress"): "the live progress bar",
    ("ScoringConfig", "length_center_chars"): "the reply length with no length adjustment",
    ("CacheConfig", "enabled"): "the persistent response cache: nothing is paid twice",
    ("DryRunConfig", "enabled"): "estimate calls, tokens and cost; send nothing "
    "(`dry_run=true` is read as this)",
    ("OfflineServerConfig", "latency_ms"): "delay of every reply",
    ("OfflineServerConfig", "jitter_ms"): "random extra delay, up to this",
    ("OfflineServerConfig", "seed"): "seed of its faults and replies",
    ("OfflineServerConfig", "rate_limit_window_s"): "the window of its rate limits",
    ("WandbConfig", "mode"): "`auto`: online with credentials, else offline; never prompts",
    ("WandbConfig", "project"): "the W&B project",
    ("WandbConfig", "entity"): "the W&B team or user; null: the login's default",
    ("WandbConfig", "group"): "the W&B run group",
    ("WandbConfig", "tags"): "W&B run tags, e.g. `wandb.tags=[a,b]`",
}


def begin(name: str) -> str:
    return f"<!-- generated: {name} begin ({COMMAND}) -->"


def end(name: str) -> str:
    return f"<!-- generated: {name} end -->"


def field_comments() -> dict[tuple[str, str], str]:
    """The schema's comment on each field, by (class, field): its line's trailing comment, or the
    comment lines right above it."""
    comments: dict[tuple[str, str], str] = {}
    for path in SCHEMA_FILES:
        comments.update(_file_comments(path.read_text()))
    return comments


def _file_comments(source: str) -> dict[tuple[str, str], str]:
    """`field_comments` of one module's source."""
    comments: dict[tuple[str, str], str] = {}
    cls = ""
    above: list[str] = []
    lines = source.splitlines()
    trailing: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            trailing[token.start[0]] = token.string.lstrip("#").strip()
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if line.startswith("class "):
            cls = line.split()[1].split("(")[0].rstrip(":")
            above = []
        elif stripped.startswith("#"):
            above.append(stripped.lstrip("#").strip())
        elif match := re.match(r"    (\w+): ", line):
            own = trailing.get(number)
            if own is None and stripped.endswith("("):  # a value wrapped onto the next lines
                own = trailing.get(number + 1)
            text = " ".join([*above, own] if own else above)
            comments[(cls, match.group(1))] = text
            above = []
        else:
            above = []
    return comments


def type_words(hint: object) -> str:
    """A field's type as the docs say it."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        kinds = [type_words(a) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" or null" if type(None) in args else "")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return " \\| ".join(f"`{member.value}`" for member in hint)
    if typing.get_origin(hint) is list:
        return f"list of {type_words(args[0])}"
    if typing.get_origin(hint) is dict:
        return "mapping"
    names = {bool: "bool", int: "integer", float: "number", str: "string"}
    return names.get(hint, str(hint)) if isinstance(hint, type) else str(hint)


def shown(value: object) -> str:
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if value == "" or value == [] or value == {}:
        return "(empty)"
    text = str(value)
    return f"`{text}`" if len(text) <= 40 else f"`{text[:37]}...`"


def leaves(cls: type, prefix: str, value: object) -> list[tuple[str, str, str, object, str]]:
    """(key, class, field, type words, value) of every leaf under `cls`."""
    hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
    rows = []
    for item in dataclasses.fields(cls):
        if item.name in HIDDEN:
            continue
        hint = hints[item.name]
        current = getattr(value, item.name)
        key = f"{prefix}{item.name}"
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            rows += leaves(hint, f"{key}.", current)
        else:
            rows.append((key, cls.__name__, item.name, type_words(hint), current))
    return rows


def keys_table() -> str:
    config, _ = load_config([])
    comments = field_comments()
    judge = {row[2]: row for row in leaves(schema.JudgeConfig, "judge.", config.judge)}
    out = [
        "| key | type | default (`model=gpt41mini`, `judge=gpt41`) | meaning |",
        "|---|---|---|---|",
    ]
    for key, cls, name, kind, value in leaves(schema.Config, "", config):
        if key.startswith("judge."):
            top = key.split(".")[1]
            if top in ENDPOINT_FIELDS:
                continue  # listed with model.*
        comment = comments.get((cls, name)) or MEANING.get((cls, name), "")
        if key.startswith("judge.") and not comment:
            comment = comments.get(("EndpointConfig", name), "")
        comment = re.sub(r" ?\(SPEC [0-9.]+\)", "", comment)
        default = shown(value)
        if key.startswith("model."):
            twin = judge.get(name) if "." not in key[len("model.") :] else None
            nested = key.replace("model.", "judge.", 1)
            judge_value = twin[4] if twin else _select(config.judge, nested[len("judge.") :])
            key = f"{key}` / `{nested}"
            if shown(judge_value) != default:
                default = f"{default} / {shown(judge_value)}"
        meaning = comment.replace("|", "\\|")
        out.append(f"| `{key}` | {kind} | {default} | {meaning} |")
    return "\n".join(out)


def _select(value: object, dotted: str) -> object:
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def default_options() -> dict[str, str]:
    defaults = yaml.safe_load((CONF / "config.yaml").read_text())["defaults"]
    chosen: dict[str, str] = {}
    for entry in defaults:
        if isinstance(entry, dict):
            chosen.update({k: v for k, v in entry.items() if v is not None})
    return chosen


def preset(group: str, name: str) -> dict[str, typing.Any]:
    return yaml.safe_load((CONF / group / f"{name}.yaml").read_text()) or {}


def groups_table() -> str:
    chosen = default_options()
    out = ["| group | options (the default first) |", "|---|---|"]
    for group in GROUPS:
        names = sorted(p.stem for p in (CONF / group).glob("*.yaml"))
        first = chosen.get(group)
        ordered = ([first] if first in names else []) + [n for n in names if n != first]
        options = ", ".join(f"`{n}` (default)" if n == first else f"`{n}`" for n in ordered)
        if group == "experiment":
            options = "none (default), " + options
        out.append(f"| `{group}` | {options} |")
    out += ["", *presets_table("model"), "", *presets_table("judge")]
    return "\n".join(out)


def presets_table(group: str) -> list[str]:
    out = [
        f"| `{group}=` | `{group}.name` | reasoning | $ per 1M tokens: input / cached / output "
        "| shutdown date | use instead |",
        "|---|---|---|---|---|---|",
    ]
    for path in sorted((CONF / group).glob("*.yaml")):
        data = preset(group, path.stem)
        price = data.get("price") or {}
        dollars = " / ".join(
            "–" if price.get(k) is None else f"{price[k]:g}"
            for k in ("input_per_mtok", "cached_input_per_mtok", "output_per_mtok")
        )
        reasoning = "yes" if data.get("reasoning") else "no"
        effort = data.get("reasoning_effort")
        if effort:
            reasoning += f" (effort {effort})"
        serve = (data.get("serve") or {}).get("kind")
        name = data.get("name", "???")
        if name == "???":
            name = f"(set {group}.name)"
        if data.get("builtin"):
            name = f"{name} (built-in endpoint)"
        elif serve:
            name = f"{name} (served by the run: {serve})"
        elif data.get("base_url"):
            name = f"{name} at {data['base_url']}"
        shutdown = data.get("shutdown_date") or "none announced"
        instead = ", ".join(f"`{r}`" for r in data.get("replacements") or []) or "–"
        out.append(
            f"| `{path.stem}` | `{name}` | {reasoning} | {dollars} | {shutdown} | {instead} |"
        )
    return out


def generated() -> dict[str, str]:
    return {"groups": groups_table(), "keys": keys_table()}


def render(page: str) -> str:
    """`page` with each generated block replaced by what this script writes."""
    for name, table in generated().items():
        start = re.escape(f"<!-- generated: {name} begin") + r"[^>]*-->"
        pattern = re.compile(start + r".*?" + re.escape(end(name)), re.S)
        if not pattern.search(page):
            raise SystemExit(f"{PAGE}: no block {begin(name)} ... {end(name)}")
        block = f"{begin(name)}\n{table}\n{end(name)}"
        page = pattern.sub(lambda _, block=block: block, page)
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args(argv)
    page = PAGE.read_text()
    fresh = render(page)
    if args.check:
        if fresh != page:
            print(f"{PAGE.relative_to(REPO)} is stale: run {COMMAND}", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(fresh)
    return 0


if __name__ == "__main__":
    sys.exit(main())

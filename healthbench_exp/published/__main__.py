"""`python -m healthbench_exp.published`: the published numbers, and a score beside them.

    python -m healthbench_exp.published list [model=M] [set=S]
    python -m healthbench_exp.published compare RUN_DIR [json=true]
    python -m healthbench_exp.published compare model=M set=S score=X grader=G [temperature=T]
        [max_tokens=N] [reasoning_effort=E] [api=chat|responses] [length_adjusted=true|false]
        [n_examples=N] [json=true]

Bad input (an unknown command, key or set, a score outside [0, 1], a missing run folder) is
one line on stderr and exit 2.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from healthbench_exp.core.published_record import PublishedComparison
from healthbench_exp.core.run_end import Exit
from healthbench_exp.core.summary import RunSummary, read_summary
from healthbench_exp.published.clusters import cluster_table
from healthbench_exp.published.compare import LENGTH_ADJUSTED, OVERALL, RunSide, compare
from healthbench_exp.published.models import model_id
from healthbench_exp.published.run_side import NotComparable, run_side
from healthbench_exp.published.table import SET_SIZES, published_rows
from healthbench_exp.published.text import cluster_lines, comparison_lines, row_line

USAGE = (
    "usage: python -m healthbench_exp.published list [model=M] [set=S] | compare RUN_DIR | "
    "compare model=M set=S score=X grader=G [temperature=T] [max_tokens=N] "
    "[reasoning_effort=E] [api=A] [length_adjusted=true|false] [n_examples=N] [json=true]"
)
LIST_KEYS = ("model", "set")
COMPARE_KEYS = (
    "model", "set", "score", "grader", "grader_effort", "temperature", "max_tokens",
    "reasoning_effort", "api", "length_adjusted", "n_examples", "json",
)  # fmt: skip
SETS = (*SET_SIZES, "meta_eval", "other")


class BadInput(Exception):
    """Input that cannot be used: its one-line message."""


@dataclass(frozen=True)
class Options:
    """key=value arguments, each read at most once through a typed accessor."""

    values: dict[str, str]

    def text(self, key: str) -> str | None:
        return self.values.get(key)

    def typed(self, key: str, kind: Callable[[str], object], what: str) -> object | None:
        raw = self.values.get(key)
        if raw is None:
            return None
        try:
            return kind(raw)
        except ValueError:
            raise BadInput(f"{key}={raw}: not {what}") from None

    def flag(self, key: str) -> bool | None:
        raw = self.values.get(key)
        if raw is None:
            return None
        if raw.lower() not in ("true", "false"):
            raise BadInput(f"{key}={raw}: write {key}=true or {key}=false")
        return raw.lower() == "true"


def options(args: Sequence[str], keys: Sequence[str]) -> Options:
    values: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in keys:
            raise BadInput(f"{arg}: not one of {', '.join(k + '=' for k in keys)}")
        values[key] = value
    return Options(values)


def list_rows(args: Sequence[str]) -> list[str]:
    opts = options(args, LIST_KEYS)
    wanted_set = opts.text("set")
    if wanted_set is not None and wanted_set not in SETS:
        raise BadInput(f"set={wanted_set}: not one of {', '.join(SETS)}")
    model = opts.text("model")
    rows = [
        r
        for r in published_rows()
        if (wanted_set is None or r.set == wanted_set)
        and (model is None or r.model_id == model_id(model) or r.model.lower() == model.lower())
    ]
    if not rows:
        return [f"nothing published for {model or 'any model'} on {wanted_set or 'any set'}"]
    return [row_line(r) for r in rows]


def inline_side(opts: Options) -> RunSide:
    """A number obtained elsewhere, with the settings given."""
    missing = [k for k in ("model", "set", "score", "grader") if opts.text(k) is None]
    if missing:
        raise BadInput(f"compare needs {', '.join(k + '=' for k in missing)} (or a run folder)")
    set_name = str(opts.text("set"))
    if set_name not in SET_SIZES:
        raise BadInput(f"set={set_name}: not one of {', '.join(SET_SIZES)}")
    score = opts.typed("score", float, "a number")
    assert isinstance(score, float)
    if not 0.0 <= score <= 1.0:
        raise BadInput(f"score={score:g}: a score is a fraction in [0, 1] (0.47, not 47)")
    n = opts.typed("n_examples", int, "a whole number")
    if n is not None and not 0 < int(str(n)) <= SET_SIZES[set_name]:
        raise BadInput(f"n_examples={n}: between 1 and {SET_SIZES[set_name]} for {set_name}")
    metric = LENGTH_ADJUSTED if opts.flag("length_adjusted") else OVERALL
    temperature = opts.typed("temperature", float, "a number")
    max_tokens = opts.typed("max_tokens", int, "a whole number")
    return RunSide(
        model=str(opts.text("model")),
        set=set_name,
        scores={metric: score},
        grader=opts.text("grader"),
        grader_effort=opts.text("grader_effort"),
        temperature=float(str(temperature)) if temperature is not None else None,
        max_tokens=int(str(max_tokens)) if max_tokens is not None else None,
        reasoning_effort=opts.text("reasoning_effort"),
        api=opts.text("api"),
        n_examples=int(str(n)) if n is not None and int(str(n)) < SET_SIZES[set_name] else None,
    )


def summary_of(folder: str) -> RunSummary:
    path = Path(folder)
    if not path.is_dir():
        raise BadInput(f"{folder}: no such run folder")
    summary = read_summary(path)
    if summary is None:
        raise BadInput(f"{folder}: no summary.json (a run that has not finished?)")
    return summary


def as_json(comparisons: list[PublishedComparison]) -> str:
    return json.dumps([c.to_dict() for c in comparisons], indent=2)


def compare_command(args: Sequence[str]) -> list[str]:
    run_dir = [a for a in args if "=" not in a]
    if len(run_dir) > 1:
        raise BadInput(f"one run folder, not {len(run_dir)}: {' '.join(run_dir)}")
    if run_dir:
        opts = options([a for a in args if "=" in a], ("json",))
        summary = summary_of(run_dir[0])
        side = run_side(summary)
        if isinstance(side, NotComparable):
            return [f"published: nothing published applies ({side.why})"]
        comparisons = compare(side)
        if opts.flag("json"):
            return [as_json(comparisons)]
        lines = comparison_lines(comparisons, f"nothing published for {side.model} on {side.set}")
        table = cluster_table(side.model, summary.metrics) if side.set == "consensus" else None
        return lines + (cluster_lines(table) if table else [])
    opts = options(args, COMPARE_KEYS)
    side = inline_side(opts)
    comparisons = compare(side)
    if opts.flag("json"):
        return [as_json(comparisons)]
    return comparison_lines(comparisons, f"nothing published for {side.model} on {side.set}")


def main(argv: Sequence[str]) -> int:
    """Run one command; 0, or 2 with one line on stderr for bad input."""
    commands = {"list": list_rows, "compare": compare_command}
    if not argv or argv[0] not in commands:
        print(USAGE, file=sys.stderr)
        return Exit.REFUSED
    try:
        lines = commands[argv[0]](argv[1:])
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.REFUSED
    print("\n".join(lines))
    return Exit.COMPLETED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The comparisons as text: one line per source (console, dry run), and the list and
per-criterion tables of `python -m healthbench_exp.published`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from healthbench_exp.core.published_record import PublishedComparison, Verdict
from healthbench_exp.published.clusters import ClusterTable
from healthbench_exp.published.run_side import NotComparable, planned
from healthbench_exp.published.table import PublishedRow

NOTHING = "published: nothing published applies ({why})"


def comparison_line(c: PublishedComparison) -> str:
    """One source: its number, the difference with its interval, the verdict, and why."""
    stated = f" ({c.uncertainty})" if c.uncertainty else ""
    head = f"published {c.value:.4g}{stated}, {c.source} [{c.status.split(';')[0]}]"
    if c.verdict == Verdict.NOT_COMPARABLE.value:
        body = f"not comparable: {'; '.join(c.why)}"
    elif c.difference is None:  # a dry run: comparable, no score yet
        body = "comparable" + (f"; differs in {'; '.join(c.why)}" if c.why else "")
    else:
        body = f"{c.difference:+.4f} +- {c.interval:.4f}: {c.verdict}"
        if c.why:
            body += f"; differs in {'; '.join(c.why)}"
    if c.not_stated:
        body += f"; not stated by the source: {', '.join(c.not_stated)}"
    return f"{head}: {body}"


def comparison_lines(comparisons: Sequence[PublishedComparison], nothing: str) -> list[str]:
    """Every comparison's line, best-matching first; `nothing` (why) when there is none."""
    if not comparisons:
        return [NOTHING.format(why=nothing)]
    return [comparison_line(c) for c in comparisons]


def row_line(row: PublishedRow) -> str:
    """One published row for `list`: model, set, metric, value, uncertainty, settings, source."""
    stated = []
    if row.grader_model:
        stated.append(
            f"grader {row.grader_model}{f' ({row.grader_effort})' if row.grader_effort else ''}"
        )
    else:
        stated.append("grader not stated")
    adjusted = {
        True: "length-adjusted",
        False: "not length-adjusted",
        None: "length policy not stated",
    }
    stated.append(adjusted[row.length_adjusted])
    for name, value in (
        ("temperature", row.temperature),
        ("max_tokens", row.max_tokens),
        ("reasoning_effort", row.reasoning_effort),
        ("runs", row.runs),
    ):
        if value is not None:
            stated.append(f"{name} {value}")
    value = f"{'~' if row.approximate else ''}{row.value:.4g}"
    uncertainty = f" ({row.uncertainty})" if row.uncertainty else ""
    url = f" {row.source.url}" if row.source.url else ""
    return (
        f"{row.model} | {row.set} {row.metric} | {value}{uncertainty} | {', '.join(stated)} | "
        f"{row.source.title}, {row.source.where}, {row.source.date}{url} | {row.source.status}"
    )


def cluster_lines(table: ClusterTable) -> list[str]:
    """The per-criterion table and the count outside beside the count expected by chance."""
    lines = [f"per criterion on consensus (paper Table 8, {table.model}):"]
    lines.append("  cluster | paper | run | n | difference +- 95% | outside")
    for c in table.cells:
        mark = "outside" if c.outside else ""
        lines.append(
            f"  {c.cluster} | {c.published:.4f} | {c.run:.4f} | {c.n} | "
            f"{c.difference:+.4f} +- {c.interval:.4f} | {mark}"
        )
    lines.append(
        f"  {table.outside} of {len(table.cells)} cells outside their interval; "
        f"{table.expected:.1f} expected by chance, "
        f"more than {table.unlikely_above} unlikely (p < 0.05)"
    )
    return lines


def summary_lines(
    comparisons: Sequence[PublishedComparison] | None, note: str | None, indent: str = "  "
) -> list[str]:
    """The end-of-run lines of a summary's `published` and `published_note` (none for a
    summary that has neither: a meta-eval, an older version)."""
    if note:
        return [indent + NOTHING.format(why=note)]
    return [indent + comparison_line(c) for c in comparisons or []]


def planned_lines(config: Mapping[str, object]) -> list[str]:
    """The dry run's lines: each published number the run will be compared with and the
    settings that differ from the source's, or why nothing published applies."""
    found = planned(config)
    if isinstance(found, NotComparable):
        return ["  " + NOTHING.format(why=found.why)]
    return ["  the run will be compared with:"] + ["    " + comparison_line(c) for c in found]

"""`python -m healthbench_exp.report group=<sweep>`: a W&B report comparing the runs of a sweep.

Options (key=value): `group` (required: the sweep's W&B group, printed by each job and stored in
its summary.json under `wandb.group`), `project` (default healthbench-exp), `entity` (default
your W&B default entity), `title`.

The report holds a runset of the sweep with a per-run summary table (score, CI, counts, model,
judge, temperature), a bar chart of overall score per run, theme and axis panels, and a run
comparer. It needs `wandb-workspaces` (`pip install 'healthbench-exp[report]'`), network and a
W&B login; offline runs must be uploaded first with `wandb sync <run dir>/wandb/offline-run-*`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from healthbench_exp.core.run_end import Exit
from healthbench_exp.core.types import AXES, THEMES
from healthbench_exp.output.wandb.mode import api_key, base_url

if TYPE_CHECKING:  # imported when needed: loading it takes seconds
    import wandb_workspaces.reports.v2 as wr

SUMMARY_COLUMNS = [
    "run:displayName",
    "summary:headline",  # the metric a run is quoted by, and its value (first)
    "summary:headline/score",
    "summary:protocol/name",
    "summary:protocol/reference",
    "summary:overall_score",
    "summary:overall_score:bootstrap_std",
    "summary:overall_score:n_samples",
    "summary:counts/ungraded_criteria",
    "summary:counts/rows_failed",
    "config:model.name",
    "config:judge.name",
    "config:sampling.temperature",
    "config:dataset.difficulty",
]
USAGE = "usage: python -m healthbench_exp.report group=<sweep> [project=P] [entity=E] [title=T]"


class ReportError(Exception):
    """Something the user must fix before a report can be made; the message says what."""


def group_filter(group: str) -> str:
    """The runset filter selecting the runs of one W&B group."""
    return "Metric('Group') == " + repr(group)


def build_report(entity: str, project: str, group: str, title: str | None = None) -> wr.Report:
    """The report object for one sweep (built offline; saving it needs a login)."""
    import wandb_workspaces.reports.v2 as wr

    runset = wr.Runset(
        entity=entity,
        project=project,
        name=f"sweep {group}",
        filters=group_filter(group),
        pinned_columns=SUMMARY_COLUMNS,
    )
    panels: list[wr.interface.PanelTypes] = [
        wr.BarPlot(title="Headline score per run", metrics=["headline/score"], orientation="h"),
        wr.BarPlot(title="Overall score per run", metrics=["overall_score"], orientation="h"),
        wr.BarPlot(title="Score by theme", metrics=[f"theme:{t}" for t in THEMES]),
        wr.BarPlot(title="Score by axis", metrics=[f"axis:{a}" for a in sorted(AXES)]),
        wr.RunComparer(diff_only="split"),
    ]
    return wr.Report(
        entity=entity,
        project=project,
        title=title or f"HealthBench sweep {group}",
        description="Scores are clipped means with bootstrap std, as the reference reports them.",
        blocks=[
            wr.H1(title or f"HealthBench sweep {group}"),
            wr.P(
                "Each run is one job of the sweep. The table lists every run's overall score, "
                "its bootstrap std and sample count, failures and ungraded criteria; the charts "
                "break the score down by theme and by axis."
            ),
            wr.PanelGrid(runsets=[runset], panels=panels),
        ],
    )


def parse_args(argv: list[str]) -> dict[str, str]:
    options = {"project": "healthbench-exp"}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep or key not in {"group", "project", "entity", "title"}:
            raise ReportError(f"unknown argument {arg!r}\n{USAGE}")
        options[key] = value
    if not options.get("group"):
        raise ReportError(f"group is required\n{USAGE}")
    return options


def make_report(argv: list[str]) -> str:
    """Build and save the report; return its URL. Raises ReportError with what is missing."""
    options = parse_args(argv)
    try:
        import wandb_workspaces  # noqa: F401
    except ImportError:
        raise ReportError(
            "W&B reports need wandb-workspaces: pip install 'healthbench-exp[report]'"
        ) from None
    if not api_key():  # a login, whatever WANDB_MODE says
        raise ReportError(
            "no W&B login: run `wandb login` or set WANDB_API_KEY (offline runs must be "
            "uploaded first with `wandb sync <run dir>/wandb/offline-run-*`)"
        )
    import wandb

    try:
        entity = options.get("entity") or wandb.Api().default_entity
        if not entity:
            raise ReportError("no W&B entity: pass entity=<your team or user name>")
        report = build_report(entity, options["project"], options["group"], options.get("title"))
        report.save()
    except (wandb.errors.Error, OSError) as exc:  # a refused key, a server that does not answer
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ReportError(
            f"W&B at {base_url()} did not take the report ({reason}); check the login "
            "(`wandb login --relogin` or WANDB_API_KEY) and WANDB_BASE_URL"
        ) from None
    return str(report.url)


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if {"-h", "--help"} & set(arguments):
        print(USAGE)
        return
    try:
        url = make_report(arguments)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(Exit.REFUSED) from None
    print(url)


if __name__ == "__main__":
    main()

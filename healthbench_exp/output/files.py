"""What a run writes into its directory as it goes, and the files that say how it ended.

- `per_criterion.jsonl`: one row per example x rollout x criterion, written as examples finish.
- `examples.jsonl`: one row per example x rollout (score, reward, reply, failure reason).
- `meta_eval.jsonl` (a meta-eval): one row per graded row (`JsonlWriter`).
- `summary.json`: the run's `RunSummary` (its schema: `core.summary`), strict JSON.
- `status.json`: running, then how the run ended (`write_status`).

Every write is flushed or atomic, and an OSError becomes `OutputWriteError`, which names the
path. The HF results dataset is `output.dataset`, the end-of-run table `output.console`; the
run's other files (invocations, batch records, served models' logs, the estimate) are written
through `output.run_dir.RunDirectory`. `OWN_FILES` names everything a run may leave behind.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from healthbench_exp.core.errors import OutputWriteError
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.run_files import SPEND_JOURNAL
from healthbench_exp.core.strict_json import dumps
from healthbench_exp.core.summary import RunSummary
from healthbench_exp.grading.scoring import consensus_criteria, reward
from healthbench_exp.output.html import pages

if TYPE_CHECKING:
    from healthbench_exp.core.types import ExampleResult


def criterion_rows(result: ExampleResult) -> list[dict[str, object]]:
    """The per_criterion.jsonl rows of one (example, rollout), failed examples included."""
    table = consensus_criteria()
    rows: list[dict[str, object]] = []
    prompt_id, rollout, theme = result.example.prompt_id, result.rollout, result.example.theme
    for index, criterion in enumerate(result.example.rubrics):
        grade = result.grades[index] if result.grades else None  # none: the example failed
        cluster = criterion.cluster
        consensus = table.get(cluster or "", {})
        rows.append(
            {
                "prompt_id": prompt_id,
                "rollout": rollout,
                "criterion_index": index,
                "criterion_id": criterion.criterion_id,
                "criterion": criterion.text,
                "points": criterion.points,
                "axis": criterion.axis,
                "theme": theme,
                "tags": list(criterion.tags),
                "cluster": cluster,
                "consensus_theme": consensus.get("theme"),
                "consensus_behavior_category": consensus.get("behavior_category"),
                "consensus_criterion": consensus.get("criterion"),
                "criteria_met": grade.criteria_met if grade else None,
                "explanation": grade.explanation if grade else "",
                "judge_attempts": grade.attempts if grade else 0,
                "error": grade.error if grade else f"example failed: {result.error}",
            }
        )
        if result.jury:  # a jury run (SPEC 7.1): every judge's verdict, the primary's first
            rows[-1]["verdicts"] = {n: g[index].criteria_met for n, g in result.jury.items()}
            rows[-1]["explanations"] = {n: g[index].explanation for n, g in result.jury.items()}
            rows[-1]["errors"] = {n: g[index].error for n, g in result.jury.items()}  # for resume
    return rows


def example_row(result: ExampleResult) -> dict[str, object]:
    score = result.score
    return {
        "prompt_id": result.example.prompt_id,
        "rollout": result.rollout,
        "theme": result.example.theme,
        "example_tags": list(result.example.example_tags),
        "score": score,
        "reward": None if score is None else reward(score),
        "criteria": len(result.example.rubrics),
        "ungraded_criteria": result.ungraded,
        "error": result.error,
        "messages": result.messages,
        "completion": result.completion,
    }


class JsonlWriter:
    """Appends rows to one JSONL file, flushing each, so nothing finished is lost; `write` says
    where in the file (in bytes) the row's line starts, to read it back (`read_lines`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file: BinaryIO | None = None
        self.size = 0

    def __enter__(self) -> JsonlWriter:
        with output_errors(self.path):
            self.file = open(self.path, "wb")
        return self

    def write(self, row: Mapping[str, object]) -> int:
        assert self.file is not None
        return self.write_lines([row])

    def write_lines(self, rows: Iterable[Mapping[str, object]]) -> int:
        """Append one line per row, flushed; return the offset of the first."""
        assert self.file is not None
        data = "".join([dumps(row, ensure_ascii=False) + "\n" for row in rows]).encode("utf-8")
        with output_errors(self.path):
            self.file.write(data)
            self.file.flush()
        offset, self.size = self.size, self.size + len(data)
        return offset

    def __exit__(self, *exc: object) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):  # a failed write already raised OutputWriteError
                self.file.close()


class ResultWriter:
    """Appends each finished example to the JSONL files and flushes, so nothing finished is lost;
    `write` says where its lines start (`RowPlace`), to read them back."""

    def __init__(self, output_dir: Path) -> None:
        self.examples = JsonlWriter(output_dir / "examples.jsonl")
        self.criteria = JsonlWriter(output_dir / "per_criterion.jsonl")

    def __enter__(self) -> ResultWriter:
        for writer in (self.criteria, self.examples):
            writer.__enter__()
        return self

    def write(self, result: ExampleResult) -> RowPlace:
        criteria = self.criteria.write_lines(criterion_rows(result))
        return RowPlace(self.examples.write(example_row(result)), criteria)

    def __exit__(self, *exc: object) -> None:
        for writer in (self.criteria, self.examples):
            writer.__exit__(*exc)


class RowPlace(NamedTuple):
    """Where one example's lines start: in examples.jsonl and (its first criterion's) in
    per_criterion.jsonl, in bytes."""

    example: int
    criteria: int


def read_lines(file: BinaryIO, offset: int, count: int) -> list[dict[str, object]]:
    """The `count` JSONL rows starting at byte `offset` of `file`."""
    file.seek(offset)
    rows = []
    for _ in range(count):
        row = json.loads(file.readline())
        assert isinstance(row, dict), "a JSONL row is an object"
        rows.append(row)
    return rows


@contextlib.contextmanager
def output_errors(path: Path) -> Iterator[None]:
    """An OSError writing `path` becomes OutputWriteError, which names the path."""
    try:
        yield
    except OSError as exc:
        raise OutputWriteError(path, exc) from None


def write_json(path: Path, data: object) -> None:
    """Write strict JSON (no NaN/Infinity: null) atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
        partial.replace(path)
    except BaseException:  # a full disk or a signal: leave no half-written .partial behind
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


def write_summary(output_dir: Path, summary: RunSummary) -> None:
    """`summary.json`: `summary.to_dict()` as strict JSON, atomically."""
    write_json(output_dir / RunSummary.FILE, summary.to_dict())


OWN_FILES = {
    ".hydra", "healthbench.log", "status.json", "summary.json", "per_criterion.jsonl",
    "examples.jsonl", "results", "report.html", "wandb", "meta_eval.jsonl",
    "estimate.json", "batches.json", "invocations.jsonl", ".lock", "report_examples.js",
    "vllm.log", "vllm-judge.log", "llamacpp.log", "llamacpp-judge.log",  # engine.serve logs
    ".calls",  # the run's own call journal when the shared cache is off (model.cache)
    SPEND_JOURNAL,  # what each invocation paid, as it happens (model.spend_journal)
    "pilot",  # a dry run's pilot run (dry_run.pilot=N): a run directory of its own
}  # fmt: skip
OWN_PATTERNS = ("batches-*.json",)  # a batched jury member's batch record (model.roles)


def foreign_files(output_dir: Path) -> list[str]:
    """Names in `output_dir` that a healthbench-exp run would not have written."""
    if not output_dir.is_dir():
        return []
    return sorted(
        p.name
        for p in output_dir.iterdir()
        if p.name not in OWN_FILES
        and not p.name.endswith(".partial")
        and not any(fnmatch.fnmatchcase(p.name, pattern) for pattern in OWN_PATTERNS)
    )


def write_status(output_dir: Path, status: Status, error: str | None = None) -> None:
    """`status.json`: running, completed or failed (with the error), for sweep summaries.

    A final status refreshes the run's report.html (written before the status was known), so
    its banners say how the run ended; a report that cannot be refreshed is only logged.
    """
    write_json(output_dir / "status.json", {"status": status, "error": error})
    if status != Status.RUNNING and (output_dir / "report.html").exists():
        try:
            pages.refresh_report(output_dir)
        except Exception as exc:  # the status is written; the report is optional
            logging.getLogger("healthbench_exp").warning("report.html not refreshed: %s", exc)


def try_write_status(output_dir: Path, status: Status, error: str | None = None) -> str | None:
    """`write_status` for a run that is already failing: None when written, else a line saying
    that status.json could not be written and why (so the caller reports it, not a traceback)."""
    try:
        write_status(output_dir, status, error)
        return None
    except OSError:
        pass
    # a full disk has no room for the new copy: overwrite the old one in place (its blocks are
    # freed by the truncation and reused), not atomic but better than a status left at running
    path = output_dir / "status.json"
    try:
        with open(path, "r+", encoding="utf-8") as file:
            file.truncate(0)
            file.write(dumps({"status": status, "error": error}, indent=2))
    except OSError as exc:
        return f"{path} could not be updated ({exc.strerror or exc})"
    return None

"""`calibration.meta_eval_run=DIR`: the meta-eval run an eval's consensus rates are calibrated by.

`load_source` reads a finished meta-eval run (its `summary.json` of task meta_eval, not partial,
`status.json` completed when there is one, and its per-row records `meta_eval.jsonl`) and
refuses, with one line (ConfigError), a directory that is not one, or one whose judge is not
this run's: the judge's name and every setting that can change a verdict (`JUDGE_SETTINGS`) are
compared between the meta-eval run's recorded config and this run's. `calibrated` then computes
SPEC 7.3 (`grading.calibration`) for each `cluster:` tag of the eval's criteria, from the
eval's own verdicts and the meta-eval run's records.
"""

from __future__ import annotations

import enum
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from healthbench_exp.config.schema import Config, ConfigError, JudgeConfig, TaskKind
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import META_EVAL, Calibrated, read_summary
from healthbench_exp.grading.calibration import calibrate, usable_pairs

KEY = "calibration.meta_eval_run"
RECORDS = "meta_eval.jsonl"
# what can change a verdict: a judge with any of these different is another judge
JUDGE_SETTINGS = (
    "name",
    "base_url",
    "builtin",
    "system_message",
    "reasoning",
    "reasoning_effort",
    "temperature",
    "max_tokens",
    "extra_body",
    "prompt_order",
    "serve.kind",
    "serve.gguf",
)


def _plain(value: object) -> object:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _setting(judge: object, dotted: str, default: object) -> object:
    value = judge
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def judge_differences(recorded: Mapping[str, object], judge: JudgeConfig) -> list[str]:
    """`judge.<key>: <there> there, <here> here` for each verdict setting that differs (a key
    the recorded config lacks counts as its default)."""
    here = _plain(asdict(judge))
    defaults = _plain(asdict(JudgeConfig()))
    out = []
    for key in JUDGE_SETTINGS:
        theirs = _setting(recorded, key, _setting(defaults, key, None))
        ours = _setting(here, key, None)
        if theirs != ours:
            out.append(f"judge.{key}: {json.dumps(theirs)} there, {json.dumps(ours)} here")
    return out


@dataclass(frozen=True)
class CalibrationSource:
    """A finished meta-eval run: where it is and its judge's records by category."""

    path: str
    rows: dict[str, list[tuple[bool | None, list[bool]]]]  # category -> (verdict, labels)


def _records(path: Path) -> dict[str, list[tuple[bool | None, list[bool]]]]:
    rows: dict[str, list[tuple[bool | None, list[bool]]]] = defaultdict(list)
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                verdict = None if row["criteria_met"] is None else bool(row["criteria_met"])
                labels = [bool(x) for x in row["binary_labels"]]
                rows[str(row["category"])].append((verdict, labels))
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"{KEY}: {path} line {number} is not a meta-eval record ({exc})"
                ) from None
    return dict(rows)


def load_source(directory: str, judge: JudgeConfig) -> CalibrationSource:
    """The meta-eval run in `directory`, checked (see the module docstring); ConfigError."""
    path = Path(directory).expanduser()
    where = f"{KEY}={directory}"
    summary = read_summary(path)
    if summary is None or summary.task != META_EVAL or not (path / RECORDS).is_file():
        raise ConfigError(
            f"{where}: not a finished meta-eval run (no summary.json of task=meta_eval with its "
            f"{RECORDS}); run `python -m healthbench_exp task=meta_eval` with this judge first"
        )
    status = run_status(path)
    if summary.partial or status not in (None, Status.COMPLETED):
        raise ConfigError(
            f"{where}: the meta-eval run did not finish ({status or 'partial'}); resume it first"
        )
    recorded = summary.config.get("judge")
    differences = judge_differences(recorded if isinstance(recorded, dict) else {}, judge)
    if differences:
        raise ConfigError(
            f"{where} was graded by another judge ({'; '.join(differences)}); calibrate with a "
            "meta-eval run of this run's judge"
        )
    return CalibrationSource(str(directory), _records(path / RECORDS))


def calibration_problem(config: Config) -> str | None:
    """The start-up refusal of `calibration.meta_eval_run` (checked before any request), or
    None: it applies to an eval only, and `load_source` must accept the directory."""
    directory = config.calibration.meta_eval_run
    if directory is None:
        return None
    if config.task.kind is not TaskKind.eval:
        return f"{KEY} applies to task=eval only (this is task={config.task.kind.value})"
    try:
        load_source(directory, config.judge)
    except ConfigError as exc:
        return str(exc)
    return None


def run_status(path: Path) -> str | None:
    """The status a run directory's `status.json` records (None: no readable one)."""
    try:
        data = json.loads((path / "status.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(data.get("status")) if isinstance(data, dict) else None


def calibrated(
    counts: Mapping[str, Mapping[str, Sequence[int]]],
    source: CalibrationSource,
    judge: str,
    samples: int,
    seed: int,
) -> Calibrated:
    """summary.json's `calibrated`: one row per `cluster:` tag of the eval's criteria; `counts`:
    per tag, per prompt_id (in the run's order), [met, graded] over the graded criteria with the
    tag, every rollout of an example together (`tasks.eval_summary.ClusterCounts`)."""
    rows = []
    for category, by_example in sorted(counts.items()):
        examples = [(m, n) for m, n in by_example.values() if n > 0]
        records = source.rows.get(category, [])
        pairs = usable_pairs([v for v, _ in records], [labels for _, labels in records])
        rate = calibrate(category, examples, pairs, samples, seed)
        rows.append(rate.record())
    return Calibrated(meta_eval_run=source.path, judge=judge, criteria=rows)

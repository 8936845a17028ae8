"""`bridge.runs=[DIR, ...]`: the bridge sources a run graded by a new judge is rescored through.

A bridge source is a finished eval run (`summary.json` of task eval, not partial, `status.json`
completed where there is one) that holds, on the same replies, verdicts of the reference
grader O (`gpt-4.1-2025-04-14`) and of this run's judge N:

- a jury run with both among its judges (per_criterion.jsonl `verdicts`), e.g. the bridge kit's
  `judge=gpt41 jury=[gpt54]`;
- a regrade (`regrade=<run> judge=...`, named by the regrade's own directory) whose judge and
  whose source run's judge (`completions.regrade_of`) are O and N, in either order: each
  criterion of the regrade is paired with the source's at the same prompt_id, rollout and
  criterion index.

N is this run's judge: the same name and every setting that can change a verdict
(`tasks.calibration_source.JUDGE_SETTINGS`) as recorded in the source's config. O is named by
its model name only. Refused with one line (ConfigError) before any request:

- a directory that is not a finished eval run, or holds neither a jury with both judges nor a
  regrade between them; this run's judge being the reference grader (nothing to bridge);
- what breaks the pairing: a regrade whose criteria differ from its source's (criterion text or
  points at the same prompt_id, rollout and index; a criterion in one and not the other) or
  whose replies differ; the same prompt_id with a different rubric (criterion texts and
  points, in order) in two sources; a source with no criterion both judges graded.

Criteria either judge left ungraded are left out (not a pairing break).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from healthbench_exp.config.bridge import BridgeConfig
from healthbench_exp.config.protocol import REFERENCE_JUDGE
from healthbench_exp.config.schema import ConfigError, JudgeConfig
from healthbench_exp.core.run_end import Status
from healthbench_exp.core.summary import EVAL, read_summary
from healthbench_exp.grading.bridge import Pair, bridge_refusal, stratum_of
from healthbench_exp.tasks.calibration_source import judge_differences, run_status
from healthbench_exp.tasks.records import CRITERIA_FILE, EXAMPLES_FILE

KEY = "bridge.runs"

Rubric = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class BridgeSource:
    """One bridge source: its directory as given, how it pairs, and its pairs (`source` 0)."""

    path: str
    kind: str  # jury | regrade
    pairs: list[Pair]
    rubrics: dict[str, Rubric]  # prompt_id -> its criteria (text, points) in order
    model: str = ""  # the model whose replies were graded (`transport`)


def _model(config: Mapping[str, object]) -> str:
    model = config.get("model")
    name = model.get("name") if isinstance(model, dict) else None
    return str(name) if name else "unknown"


def _lines(path: Path, where: str) -> Iterator[tuple[int, dict[str, object]]]:
    try:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if line.strip():
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValueError("not an object")
                    yield number, row
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{where}: {path.name} cannot be read ({exc})") from None


def _finished(path: Path, where: str) -> Mapping[str, object]:
    """The run's recorded config; ConfigError unless a finished eval run with its criteria."""
    summary = read_summary(path)
    if summary is None or summary.task != EVAL or not (path / CRITERIA_FILE).is_file():
        raise ConfigError(
            f"{where}: not a finished eval run (no summary.json with {CRITERIA_FILE})"
        )
    status = run_status(path)
    if summary.partial or status not in (None, Status.COMPLETED):
        raise ConfigError(f"{where}: the run did not finish ({status or 'partial'})")
    return summary.config


def _judge_problem(recorded: object, judge: JudgeConfig, where: str, role: str) -> None:
    differences = judge_differences(recorded if isinstance(recorded, dict) else {}, judge)
    if differences:
        raise ConfigError(
            f"{where}: its {role} is not this run's judge ({'; '.join(differences)}); a bridge "
            "pairs the reference grader with this run's judge"
        )


def _criterion(row: Mapping[str, object]) -> tuple[tuple[str, int, int], str, float, list[str]]:
    key = (str(row["prompt_id"]), int(str(row["rollout"])), int(str(row["criterion_index"])))
    tags = row.get("tags")
    if not isinstance(tags, list):
        raise TypeError("tags is not a list")
    return key, str(row["criterion"]), float(str(row["points"])), [str(t) for t in tags]


def _verdict(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _jury_pairs(path: Path, where: str, new: str) -> tuple[list[Pair], dict[str, Rubric]]:
    pairs, rubrics = [], _Rubrics(where)
    for number, row in _lines(path / CRITERIA_FILE, where):
        try:
            key, text, points, tags = _criterion(row)
            verdicts = row["verdicts"]
            assert isinstance(verdicts, dict)
        except (KeyError, ValueError, TypeError, AssertionError):
            raise ConfigError(
                f"{where}: {CRITERIA_FILE} line {number} is not a jury record"
            ) from None
        rubrics.add(key, text, points)
        old_v, new_v = _verdict(verdicts.get(REFERENCE_JUDGE)), _verdict(verdicts.get(new))
        if old_v is not None and new_v is not None:
            pairs.append(Pair(0, f"{key[0]}:{key[1]}", stratum_of(tags), points, new_v, old_v))
    return pairs, rubrics.done()


class _Rubrics:
    """Each prompt_id's criteria (text, points) by index, as met in a run's records."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.by: dict[str, dict[int, tuple[str, float]]] = {}

    def add(self, key: tuple[str, int, int], text: str, points: float) -> None:
        known = self.by.setdefault(key[0], {}).setdefault(key[2], (text, points))
        if known != (text, points):
            raise ConfigError(
                f"{self.where}: prompt_id {key[0]} has two rubrics (criterion {key[2]} differs "
                "between rollouts)"
            )

    def done(self) -> dict[str, Rubric]:
        return {p: tuple(c for _, c in sorted(by.items())) for p, by in self.by.items()}


def _replies(path: Path, where: str) -> dict[tuple[str, int], str | None]:
    out = {}
    for _, row in _lines(path / EXAMPLES_FILE, where):
        completion = row.get("completion")
        out[(str(row.get("prompt_id")), int(str(row.get("rollout", 0))))] = (
            None if completion is None else str(completion)
        )
    return out


def _regrade_pairs(
    path: Path, source: Path, where: str, new_is_regrade: bool
) -> tuple[list[Pair], dict[str, Rubric]]:
    theirs: dict[tuple[str, int, int], tuple[str, float, bool | None]] = {}
    for number, row in _lines(source / CRITERIA_FILE, where):
        try:
            key, text, points, _ = _criterion(row)
        except (KeyError, ValueError, TypeError):
            raise ConfigError(
                f"{where}: {source / CRITERIA_FILE} line {number} is unreadable"
            ) from None
        theirs[key] = (text, points, _verdict(row.get("criteria_met")))
    if (path / EXAMPLES_FILE).is_file() and _replies(path, where) != _replies(source, where):
        raise ConfigError(f"{where}: the regrade's replies differ from its source run's {source}")
    pairs, rubrics, seen = [], _Rubrics(where), set()
    for number, row in _lines(path / CRITERIA_FILE, where):
        try:
            key, text, points, tags = _criterion(row)
        except (KeyError, ValueError, TypeError):
            raise ConfigError(f"{where}: {CRITERIA_FILE} line {number} is unreadable") from None
        other = theirs.get(key)
        if other is None or other[:2] != (text, points):
            raise ConfigError(
                f"{where}: criterion {key[2]} of prompt_id {key[0]} (rollout {key[1]}) "
                f"differs from its source run's {source}: the verdicts do not pair"
            )
        seen.add(key)
        rubrics.add(key, text, points)
        mine, source_v = _verdict(row.get("criteria_met")), other[2]
        new_v, old_v = (mine, source_v) if new_is_regrade else (source_v, mine)
        if old_v is not None and new_v is not None:
            pairs.append(Pair(0, f"{key[0]}:{key[1]}", stratum_of(tags), points, new_v, old_v))
    if len(seen) != len(theirs):
        missing = next(k for k in theirs if k not in seen)
        raise ConfigError(
            f"{where}: criterion {missing[2]} of prompt_id {missing[0]} is in the source run "
            f"{source} and not in the regrade: the verdicts do not pair"
        )
    return pairs, rubrics.done()


def load_source(directory: str, judge: JudgeConfig) -> BridgeSource:
    """The bridge source in `directory`, checked (see the module docstring); ConfigError."""
    path = Path(directory).expanduser()
    where = f"{KEY}: {directory}"
    config = _finished(path, where)
    primary = config.get("judge")
    primary_name = primary.get("name") if isinstance(primary, dict) else None
    members = config.get("jury_members")
    by_name = (
        {m.get("name"): m for m in members if isinstance(m, dict)}
        if isinstance(members, list)
        else {}
    )
    names = {primary_name, *by_name}
    completions = config.get("completions")
    regrade_of = completions.get("regrade_of") if isinstance(completions, dict) else None
    if REFERENCE_JUDGE in names and judge.name in names and len(names) > 1:
        _judge_problem(
            primary if primary_name == judge.name else by_name.get(judge.name),
            judge,
            where,
            "judge",
        )
        pairs, rubrics = _jury_pairs(path, where, judge.name)
        kind, model = "jury", _model(config)
    elif isinstance(regrade_of, str):
        source = Path(regrade_of)
        source_config = _finished(source, f"{where} (its regrade source {source})")
        theirs = source_config.get("judge")
        their_name = theirs.get("name") if isinstance(theirs, dict) else None
        if {primary_name, their_name} != {REFERENCE_JUDGE, judge.name}:
            raise ConfigError(
                f"{where}: a regrade between {their_name} and {primary_name}; a bridge needs "
                f"the reference grader {REFERENCE_JUDGE} and this run's judge {judge.name}"
            )
        new_is_regrade = primary_name == judge.name
        _judge_problem(primary if new_is_regrade else theirs, judge, where, "judge")
        pairs, rubrics = _regrade_pairs(path, source, where, new_is_regrade)
        kind, model = "regrade", _model(source_config)  # the replies are the source run's
    else:
        raise ConfigError(
            f"{where}: graded by {', '.join(sorted(str(n) for n in names))}; a bridge source is "
            f"a jury run with both {REFERENCE_JUDGE} and this run's judge {judge.name}, or a "
            "regrade between them (named by the regrade's directory)"
        )
    if not pairs:
        raise ConfigError(f"{where}: no criterion graded by both judges")
    return BridgeSource(str(directory), kind, pairs, rubrics, model)


def load_sources(bridge: BridgeConfig, judge: JudgeConfig) -> list[BridgeSource]:
    """Every source of `bridge.runs`, each pair marked with its source's index; ConfigError
    where one is refused, or two give one prompt_id different rubrics."""
    if judge.name == REFERENCE_JUDGE:
        raise ConfigError(
            f"{KEY}: this run's judge is the reference grader {REFERENCE_JUDGE}: its scores are "
            "on the reference scale already; bridge a run graded by another judge"
        )
    sources: list[BridgeSource] = []
    rubrics: dict[str, tuple[str, Rubric]] = {}
    for index, directory in enumerate(bridge.runs):
        source = load_source(directory, judge)
        for prompt_id, rubric in source.rubrics.items():
            first = rubrics.setdefault(prompt_id, (directory, rubric))
            if first[1] != rubric:
                raise ConfigError(
                    f"{KEY}: prompt_id {prompt_id} has different rubrics in {first[0]} and "
                    f"{directory}: the sources graded different data"
                )
        pairs = [Pair(index, p.example, p.stratum, p.points, p.new, p.old) for p in source.pairs]
        sources.append(BridgeSource(source.path, source.kind, pairs, source.rubrics, source.model))
    return sources


def bridge_problem(bridge: BridgeConfig, judge: JudgeConfig, is_eval: bool) -> str | None:
    """The start-up refusal of `bridge.runs` (before any request), or None."""
    if not bridge.runs:
        return None
    if not is_eval:
        return f"{KEY} applies to task=eval only"
    try:
        sources = load_sources(bridge, judge)
    except ConfigError as exc:
        return str(exc)
    refusal = bridge_refusal(all_pairs(sources), bridge.method.value)
    return None if refusal is None else f"{KEY}: {refusal}"


def all_pairs(sources: Sequence[BridgeSource]) -> list[Pair]:
    return [p for s in sources for p in s.pairs]

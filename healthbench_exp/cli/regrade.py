"""`regrade=<run dir>`: grade a finished eval run's replies again, with another judge or a jury.

    python -m healthbench_exp regrade=outputs/2026-11-23/09-12-44 judge=gpt54 [jury=[...]]

The source run's own overrides (`.hydra/overrides.yaml`) are replayed, so the regrade reads the
same data and draws the same rows in the same order; its replies are the source's
`examples.jsonl` (`completions=file`, which sends no model call and needs no model API key),
and `completions.regrade_of` names the source, so the new run's summary and protocol record
that it is a regrade. The judge (and `jury=`) the command gives replace the source's; without
one the source's judge grades again (the response cache answers what it already graded). Keys
that would change the data, the rows or the replies (`model`, `dataset`, `difficulty`,
`sampling`, `completions`, `task`, `experiment`) are refused; how it runs (runner, cache,
budget, W&B) may be given. The regrade writes into its own run directory (`hydra.run.dir`, or
the default); the source directory is only read.

Refused with one line before any request (ConfigError, exit 2): a missing directory, one
without a finished eval run (a meta-eval, an unfinished, partial or failed run), a data file
whose sha256 is no longer the one the source recorded, and `hydra.run.dir=<the source>`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from omegaconf import OmegaConf

from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core.run_end import Status

# keys the source run fixes: its data, its rows, its replies (a prefix ends in ".")
FIXED = ("model", "dataset", "difficulty", "sampling", "completions", "task", "experiment")
JUDGE_KEYS = ("judge", "jury")  # the command's replace the source's


def _key(argument: str) -> str:
    return argument.split("=", 1)[0].lstrip("+~")


def _root(key: str) -> str:
    return key.split(".", 1)[0].split("/", 1)[0]


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def check_source(run_dir: Path) -> dict[str, object]:
    """The source run's summary; ConfigError unless `run_dir` holds a finished eval run."""
    where = f"regrade={run_dir}"
    if not run_dir.is_dir():
        raise ConfigError(f"{where}: no such directory")
    if not (run_dir / ".hydra" / "overrides.yaml").is_file():
        raise ConfigError(
            f"{where}: not a healthbench-exp run directory (no .hydra/overrides.yaml there)"
        )
    status = _read_json(run_dir / "status.json").get("status")
    summary = _read_json(run_dir / "summary.json")
    if summary.get("task") == "meta_eval":
        raise ConfigError(f"{where}: a meta-eval run; only an eval run's replies can be regraded")
    if status != Status.COMPLETED or summary.get("partial") or not summary:
        raise ConfigError(
            f"{where}: not a finished eval run (status: {status or 'unknown'}); regrade a "
            f"completed one, or finish this one first with resume={run_dir}"
        )
    if not (run_dir / "examples.jsonl").is_file():
        raise ConfigError(f"{where}: the run has no examples.jsonl to take its replies from")
    _check_data_file(run_dir, summary)
    return summary


def _check_data_file(run_dir: Path, summary: dict[str, object]) -> None:
    """The source's `dataset.path` file must still be the one it read (its recorded sha256)."""
    protocol = summary.get("protocol")
    config = summary.get("config")
    data_file = protocol.get("data_file") if isinstance(protocol, dict) else None
    dataset = config.get("dataset") if isinstance(config, dict) else None
    path = dataset.get("path") if isinstance(dataset, dict) else None
    recorded = data_file.get("sha256") if isinstance(data_file, dict) else None
    if not isinstance(path, str) or not isinstance(recorded, str):
        return
    file = Path(path).expanduser()
    try:
        digest = hashlib.sha256(file.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(
            f"regrade={run_dir}: the run's data file {file} cannot be read ({exc.strerror})"
        ) from None
    if digest != recorded:
        raise ConfigError(
            f"regrade={run_dir}: the run's data file {file} changed since the run read it "
            f"(sha256 {digest[:12]}..., the run recorded {recorded[:12]}...)"
        )


def _search_path(run_dir: Path) -> list[str]:
    """The source's `hydra.searchpath=` override (Hydra keeps it in `.hydra/hydra.yaml`): the
    config directories its presets came from."""
    try:
        saved = OmegaConf.load(run_dir / ".hydra" / "hydra.yaml")
        given = OmegaConf.select(saved, "hydra.overrides.hydra", default=None) or []
    except Exception:  # missing or unreadable: the package's presets only
        return []
    return [str(o) for o in given if _key(str(o)) == "hydra.searchpath"]


def regrade_arguments(argv: list[str]) -> list[str] | None:
    """The Hydra arguments `regrade=<run dir>` stands for, checked; None without `regrade=`.

    ConfigError (one line) for every refusal; nothing is written, nothing sent."""
    chosen = [a for a in argv if _key(a) == "regrade"]
    if not chosen:
        return None
    extra = [a for a in argv if _key(a) != "regrade"]
    if len(chosen) > 1 or any("=" not in a or a.startswith("-") for a in extra):
        raise ConfigError("regrade=<run dir> takes one run directory and key=value overrides")
    if any(_key(a) == "resume" for a in extra):
        raise ConfigError("regrade= and resume= do not go together; give one")
    fixed = sorted({_key(a) for a in extra if _root(_key(a)) in FIXED})
    if fixed:
        raise ConfigError(
            f"regrade= grades the source run's data, rows and replies: {', '.join(fixed)} "
            "cannot be given (judge=, jury= and how it runs can)"
        )
    run_dir = Path(chosen[0].split("=", 1)[1]).expanduser()
    for argument in extra:
        if _key(argument) == "hydra.run.dir":
            target = Path(argument.split("=", 1)[1]).expanduser()
            if target.resolve() == run_dir.resolve():
                raise ConfigError(
                    f"regrade={run_dir} with hydra.run.dir={target}: the source run's "
                    "directory is read-only; give the regrade a new directory"
                )
    check_source(run_dir)
    source = run_dir.resolve()
    given = {_key(a) for a in extra}
    replaced_roots = {_root(k) for k in given if k in JUDGE_KEYS}  # judge= or jury=: all of it
    overrides = [str(o) for o in OmegaConf.load(run_dir / ".hydra" / "overrides.yaml")]
    overrides += _search_path(run_dir)
    kept = [
        o
        for o in overrides
        if _key(o) not in given
        and _root(_key(o)) not in replaced_roots
        and _root(_key(o)) != "completions"
        # the source's own directory settings go; its config directories stay (its presets)
        and (not _key(o).startswith("hydra.") or _key(o) == "hydra.searchpath")
    ]
    return [
        *kept,
        "completions=file",
        f"completions.path={source / 'examples.jsonl'}",
        f"completions.regrade_of={source}",
        *extra,
    ]

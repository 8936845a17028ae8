"""`python -m healthbench_exp.bridge_kit new_judge=<preset> [key=value ...]`: grade a
stratified sample with both the reference grader and a new judge, and keep it as a bridge
source (docs/bridge.md).

Its own keys (every other `key=value` is an override of the graded run, as the main command
takes it: `model=`, `difficulty=`, `dry_run=true`, `cache.*`, `budget.*`, ...):

- `new_judge`: the judge preset the bridge leads to (`gpt54`, ...); required.
- `examples` (500): the sample's size; `seed` (0): its seed (`tasks.bridge_sample`: every
  consensus cluster and axis represented, the rest drawn at random).
- `batch` (false): send both judges' calls through the Batch API (half price, within 24 h):
  `judge.batch=true` for the reference grader, and the new judge's preset with `batch: true`
  (a preset written into the kit's folder; the same model and verdict settings).
- `old_judge` (`gpt41`): the reference grader's preset; its model name must be
  `gpt-4.1-2025-04-14` (a test points it at the built-in endpoint, keeping the name).
- `difficulty=` and `dataset.*` pick the data sampled from (`all` by default; a local copy:
  `dataset.path=FILE`); the run reads the sample.
- `out` (`bridge_kit/<date>_<time>`): the kit's folder, new or empty: `bridge_sample.jsonl`,
  and the run, `source/` (a dry run: `dry_run/`, its `estimate.json`).

The run is the main command (`python -m healthbench_exp`) on the sample as `dataset.path`, with
`judge=<old_judge>` and `jury=[<new_judge>]`: a jury run, which `bridge.runs=[<out>/source]`
names in any later run graded by the new judge. Config errors are one line, exit 2, before any
request; otherwise the exit code is the run's.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from healthbench_exp.cli.compose import load_config
from healthbench_exp.config.protocol import REFERENCE_JUDGE
from healthbench_exp.config.schema import ConfigError
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.data.rows import DataError
from healthbench_exp.output.bridge_kit_files import write_batch_preset, write_sample
from healthbench_exp.tasks.bridge_sample import stratified_sample

KIT_KEYS = {"new_judge", "examples", "seed", "batch", "old_judge", "out"}
SAMPLE = "bridge_sample.jsonl"
TRUE = ("true", "1", "yes")


def _split(argv: Sequence[str]) -> tuple[dict[str, str], list[str], list[str]]:
    """(the kit's keys, the run's overrides, the overrides that pick the data to sample)."""
    kit: dict[str, str] = {}
    rest: list[str] = []
    data: list[str] = []
    for argument in argv:
        key, sep, value = argument.partition("=")
        if not sep:
            raise ConfigError(f"bridge_kit takes key=value arguments, got {argument!r}")
        root = key.split(".")[0].lstrip("+~")
        if key in KIT_KEYS:
            kit[key] = value
        elif root == "dataset":  # the data sampled from; the run reads the sample
            data.append(argument)
        elif root in ("judge", "jury", "hydra") and not key.startswith(
            ("judge.name", "hydra.searchpath")
        ):
            raise ConfigError(
                f"bridge_kit sets {root} itself; give new_judge=, old_judge= (and batch=true)"
            )
        else:
            rest.append(argument)
    if "new_judge" not in kit:
        raise ConfigError("bridge_kit needs new_judge=<judge preset> (the judge to bridge to)")
    return kit, rest, data


def _int(kit: dict[str, str], key: str, default: int, least: int) -> int:
    try:
        value = int(kit.get(key, default))
    except ValueError:
        raise ConfigError(f"{key} must be a whole number, got {kit[key]!r}") from None
    if value < least:
        raise ConfigError(f"{key} must be at least {least}, got {value}")
    return value


def plan(argv: Sequence[str]) -> tuple[list[str], Path]:
    """The main command's arguments for the kit's run, and the run's directory; writes the
    sample (and the batch preset). ConfigError (one line) before anything is written."""
    kit, rest, data = _split(argv)
    n, seed = _int(kit, "examples", 500, 1), _int(kit, "seed", 0, 0)
    batch = kit.get("batch", "false").lower() in TRUE
    old, new = kit.get("old_judge", "gpt41"), kit["new_judge"]
    dry = any(a.partition("=")[0] == "dry_run" and a.endswith(("=true", "=True")) for a in rest)
    out = Path(kit.get("out") or f"bridge_kit/{time.strftime('%Y-%m-%d_%H-%M-%S')}").expanduser()
    if out.exists() and any(out.iterdir()):
        raise ConfigError(f"out={out} is not empty; give the kit a new folder")
    config, _ = load_config([*rest, *data, f"judge={old}", f"jury=[{new}]"])
    if config.judge.name != REFERENCE_JUDGE:
        raise ConfigError(
            f"old_judge={old} is {config.judge.name}; a bridge starts from the reference "
            f"grader {REFERENCE_JUDGE}"
        )
    if config.jury_members[0].name == REFERENCE_JUDGE:
        raise ConfigError(f"new_judge={new} is the reference grader itself; nothing to bridge")
    examples = load_examples(config.dataset)
    chosen = [examples[i] for i in stratified_sample(examples, n, seed)]
    sample = write_sample(out / SAMPLE, chosen)
    member = new
    extra: list[str] = []
    if batch:
        if any(a.startswith("hydra.searchpath") for a in rest):
            raise ConfigError("batch=true writes its own hydra.searchpath; give presets by name")
        member = write_batch_preset(out / "conf", new)
        extra = [f"hydra.searchpath=[file://{(out / 'conf').resolve()}]", "judge.batch=true"]
    run_dir = out / ("dry_run" if dry else "source")
    arguments = [
        *rest,
        *extra,
        f"judge={old}",
        f"jury=[{member}]",
        f"dataset.path={sample.resolve()}",
        f"hydra.run.dir={run_dir.resolve()}",
    ]
    return arguments, run_dir


def main(argv: Sequence[str] | None = None) -> int:
    """Plan, then run the main command; its exit code (2 for a refused plan)."""
    try:
        arguments, run_dir = plan(sys.argv[1:] if argv is None else argv)
    except (ConfigError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    code = subprocess.call([sys.executable, "-m", "healthbench_exp", *arguments])
    if code == 0 and run_dir.name == "source":
        print(
            f"bridge source: {run_dir}\n  name it in runs graded by the new judge: "
            f"bridge.runs=[{run_dir}]"
        )
    return code

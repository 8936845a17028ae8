"""`python -m healthbench_exp.bridge_kit new_judge=<preset> [key=value ...]`: grade a
stratified sample of replies of several models with both the reference grader and a new judge,
keep each model's run as a bridge source, and check the bridge across them (docs/bridge.md).

Its own keys (every other `key=value` is an override of the graded runs, as the main command
takes it: `difficulty=`, `dry_run=true`, `cache.*`, `budget.*`, ...):

- `new_judge`: the judge preset the bridge leads to (`gpt54`, ...); required.
- `models` (`o3,gpt41,gpt4o`): the model presets whose replies are graded, one bridge source
  each. The default's published HealthBench scores (gpt-4.1 grader) are 0.60, 0.48 and 0.32:
  far enough apart that leaving one out tests the bridge on a stronger and a weaker model. An
  entry `preset@name` also sets `model.name` (the same preset under another name, e.g. the
  built-in endpoint's models of set strength). `model=<preset>` alone: that one model.
- `examples` (250 per model): the sample's size; `seed` (0): its seed (`tasks.bridge_sample`:
  every consensus cluster and axis represented, the rest drawn at random). Every model answers
  the same sample. 250 x 3 models: a bridge of 750 examples, which the simulation study
  (docs/bridge.md) puts at an interval half-width of about 0.028 for a 1,000-row run bridged
  with a judge of J about 0.6.
- `batch` (false): send both judges' calls through the Batch API (half price, within 24 h):
  `judge.batch=true` for the reference grader, and the new judge's preset with `batch: true`
  (a preset written into the kit's folder; the same model and verdict settings).
- `old_judge` (`gpt41`): the reference grader's preset; its model name must be
  `gpt-4.1-2025-04-14` (a test points it at the built-in endpoint, keeping the name).
- `difficulty=` and `dataset.*` pick the data sampled from (`all` by default; a local copy:
  `dataset.path=FILE`); the runs read the sample.
- `out` (`bridge_kit/<date>_<time>`): the kit's folder, new or empty: `bridge_sample.jsonl`,
  one run per model, `source_<model>/` (a dry run: `dry_run_<model>/`, each with its
  `estimate.json`, and their total printed; the dry run is told as the main command composes
  it, `config.dry_run`: `dry_run=true|1|yes`, `dry_run.enabled=`, and `dry_run.pilot=N`, whose
  first N rows per model are sent and paid, and reused by the kit's run from the response
  cache), and with two or more models `bridge_check.json`:
  each source left out through each method and the spread between sources
  (`tasks.bridge_result.bridge_check`).

Each run is the main command (`python -m healthbench_exp`) on the sample as `dataset.path`,
with `judge=<old_judge>` and `jury=[<new_judge>]`: a jury run, which
`bridge.runs=[<out>/source_<model>,...]` names in any later run graded by the new judge.
Config errors are one line, exit 2, before any request (`cli.bridge_kit_args`; `--help` prints
this); a run that stops (its budget, a signal: `cli.bridge_kit_runs`) stops the kit with that
run's exit code, the command that finishes it and those of the runs not started.
"""

from __future__ import annotations

import re
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from healthbench_exp.cli.bridge_kit_args import (
    split_arguments,
    switch,
    wants_help,
    whole_number,
)
from healthbench_exp.cli.bridge_kit_runs import run_to_its_end, stopped_lines
from healthbench_exp.cli.compose import load_config, translate_dry_run
from healthbench_exp.cli.hydra_errors import composition_error
from healthbench_exp.cli.overrides import check_overrides
from healthbench_exp.config.bridge import BridgeConfig
from healthbench_exp.config.checks import validate
from healthbench_exp.config.protocol import REFERENCE_JUDGE
from healthbench_exp.config.schema import Config, ConfigError, JudgeConfig
from healthbench_exp.core.run_end import Exit
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.data.rows import DataError
from healthbench_exp.output.bridge_kit_files import (
    check_lines,
    dry_run_lines,
    write_batch_preset,
    write_check,
    write_sample,
)
from healthbench_exp.tasks.bridge_result import bridge_check
from healthbench_exp.tasks.bridge_sample import stratified_sample
from healthbench_exp.tasks.bridge_source import load_sources

SAMPLE = "bridge_sample.jsonl"
CHECK = "bridge_check.json"
# published HealthBench scores (gpt-4.1 grader, SPEC section 3): o3 0.60, gpt-4.1 0.48, gpt-4o
# 0.32: a strong, a middling and a weak model, about 0.15 apart (the study's shifted worlds)
MODELS = "o3,gpt41,gpt4o"
EXAMPLES = 250  # per model: a bridge of 750 examples (docs/bridge.md, the study)


@dataclass
class Plan:
    """The kit's runs: per model its label, the main command's arguments and its directory;
    the new judge as the runs grade with it; the bootstrap settings of the check."""

    runs: list[tuple[str, list[str], Path]]
    out: Path
    dry: bool  # a dry run (`dry_run=true`, `dry_run.pilot=N`): estimates, no bridge sources
    pilot: int  # the rows each model's dry run sends first (`dry_run.pilot`); 0: none
    new_judge: JudgeConfig
    samples: int
    seed: int


def _models(text: str) -> list[tuple[str, list[str]]]:
    """(label, the run's model overrides) per entry of `models=` (`preset` or `preset@name`);
    each checked as the main command checks `model=<preset>`."""
    out = []
    for entry in filter(None, (e.strip() for e in text.strip("[]").split(","))):
        preset, _, name = entry.partition("@")
        label = re.sub(r"[^A-Za-z0-9._-]", "_", name or preset)
        out.append((label, [f"model={preset}", *([f"model.name={name}"] if name else [])]))
    labels = [label for label, _ in out]
    if not out or len(set(labels)) != len(labels):
        raise ConfigError(f"models={text}: give distinct model presets (preset or preset@name)")
    for _, overrides in out:
        check_overrides(overrides)
    return out


def _compose(overrides: list[str]) -> Config:
    """`load_config(overrides)`'s Config; what Hydra finds wrong while composing is a
    ConfigError of one line, worded as the main command words it (`composition_error`)."""
    try:
        config = load_config(overrides)[0]
    except ConfigError:
        raise
    except Exception as exc:
        problem = composition_error(exc, overrides)
        if problem is None:
            raise  # a bug: its traceback is the report
        raise problem from None
    return config


def _kit_folder(text: str | None) -> Path:
    """`out=` (default `bridge_kit/<date>_<time>`): a folder that is new or empty."""
    out = Path(text or f"bridge_kit/{time.strftime('%Y-%m-%d_%H-%M-%S')}").expanduser()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"out={out} is a file; give the kit a new folder")
    if out.is_dir() and any(out.iterdir()):
        raise ConfigError(f"out={out} is not empty; give the kit a new folder")
    return out


def plan(argv: Sequence[str]) -> Plan:
    """The kit's runs (see `Plan`); writes the sample (and the batch preset). ConfigError (one
    line) before anything is written, and for a folder that cannot be written."""
    command_line = split_arguments(argv)
    kit, rest, data = command_line.kit, command_line.runs, command_line.data
    n, seed = whole_number(kit, "examples", EXAMPLES, 1), whole_number(kit, "seed", 0, 0)
    batch = switch(kit, "batch")
    if batch and any(a.startswith("hydra.searchpath") for a in rest):
        raise ConfigError("batch=true writes its own hydra.searchpath; give presets by name")
    old, new = kit.get("old_judge", "gpt41"), kit["new_judge"]
    for key, preset in (("old_judge", old), ("new_judge", new)):
        try:  # a judge preset, as the main command checks judge=<preset>
            check_overrides(translate_dry_run([*rest, f"judge={preset}"]))
        except ConfigError as exc:
            raise ConfigError(f"{key}={preset}: {str(exc).partition(': ')[2]}") from None
    models = _models(kit.get("models", MODELS))
    out = _kit_folder(kit.get("out"))
    configs = [_compose([*rest, *model, *data, f"judge={old}", f"jury=[{new}]"])
               for _, model in models]  # fmt: skip
    config = configs[0]
    if config.judge.name != REFERENCE_JUDGE:
        raise ConfigError(
            f"old_judge={old} is {config.judge.name}; a bridge starts from the reference "
            f"grader {REFERENCE_JUDGE}"
        )
    dry, pilot = config.dry_run.requested, config.dry_run.pilot  # as the runs compose it
    if config.jury_members[0].name == REFERENCE_JUDGE:
        raise ConfigError(f"new_judge={new} is the reference grader itself; nothing to bridge")
    for each in configs:  # ranges and combinations, as each run checks them when it starts
        validate(each)
    examples = load_examples(config.dataset)
    chosen = [examples[i] for i in stratified_sample(examples, n, seed)]
    member = new
    extra: list[str] = []
    try:
        sample = write_sample(out / SAMPLE, chosen)
        if batch:
            member = write_batch_preset(out / "conf", new)
            extra = [f"hydra.searchpath=[file://{(out / 'conf').resolve()}]", "judge.batch=true"]
    except OSError as exc:
        raise ConfigError(f"out={out}: cannot write the kit's folder ({exc})") from None
    runs = []
    for label, model in models:
        run_dir = out / f"{'dry_run' if dry else 'source'}_{label}"
        arguments = [
            *rest,
            *model,
            *extra,
            f"judge={old}",
            f"jury=[{member}]",
            f"dataset.path={sample.resolve()}",
            f"hydra.run.dir={run_dir.resolve()}",
        ]
        runs.append((label, arguments, run_dir))
    samples, seed_ = config.runner.bootstrap_samples, config.sampling.seed
    return Plan(runs, out, dry, pilot, config.jury_members[0], samples, seed_)


def usage() -> str:
    """`bridge_kit --help`: the command and its keys (this module's description)."""
    return f"usage: {(__doc__ or '').strip()}"


def main(argv: Sequence[str] | None = None) -> int:
    """Plan, then run the main command; its exit code (2 for a refused plan)."""
    argv = sys.argv[1:] if argv is None else argv
    if wants_help(argv):
        print(usage())
        return Exit.COMPLETED
    try:
        kit = plan(argv)
    except (ConfigError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return Exit.REFUSED
    except KeyboardInterrupt:  # Ctrl-C while the sample was drawn: no run started
        print("bridge kit interrupted before its first run; nothing was sent", file=sys.stderr)
        return Exit.signalled(signal.SIGINT)
    for number, (label, arguments, run_dir) in enumerate(kit.runs):
        code, signals = run_to_its_end(arguments)
        if code != Exit.COMPLETED or signals:
            rest = [(other, args) for other, args, _ in kit.runs[number + 1 :]]
            print("\n".join(stopped_lines(label, code, signals, run_dir, rest)), file=sys.stderr)
            return code or Exit.signalled(signals[0])  # a run that finished as the signal came
    dirs = [run_dir for _, _, run_dir in kit.runs]
    if kit.dry:
        print("\n".join(dry_run_lines(dirs, kit.pilot)))
        return Exit.COMPLETED
    named = ",".join(str(d) for d in dirs)
    print(
        f"bridge sources: {named}\n  name them in runs graded by the new judge: "
        f"bridge.runs=[{named}]"
    )
    if len(dirs) > 1:
        sources = load_sources(BridgeConfig(runs=[str(d) for d in dirs]), kit.new_judge)
        check = bridge_check(sources, kit.new_judge.name, kit.samples, kit.seed)
        write_check(kit.out / CHECK, check)
        print("\n".join(check_lines(check)))
        print(f"  the check: {kit.out / CHECK}")
    return Exit.COMPLETED

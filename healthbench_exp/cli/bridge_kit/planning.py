"""The bridge kit's plan (`plan`): from its command line to its runs, each checked before
anything is written: the kit's keys read (`cli.bridge_kit.arguments`), the models and both
judges checked as the main command checks them, every run's config composed and validated, the
kit's folder new or empty, the stratified sample drawn and written (`tasks.bridge_sample`), and
per model the main command's arguments and its run directory."""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from healthbench_exp.cli.bridge_kit.arguments import split_arguments, switch, whole_number
from healthbench_exp.cli.compose import load_config, translate_dry_run
from healthbench_exp.cli.hydra_errors import composition_error
from healthbench_exp.cli.overrides import check_overrides
from healthbench_exp.config.checks import validate
from healthbench_exp.config.protocol import REFERENCE_JUDGE
from healthbench_exp.config.schema import Config, ConfigError, JudgeConfig
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.output.bridge_kit_files import write_batch_preset, write_sample
from healthbench_exp.tasks.bridge_sample import stratified_sample

SAMPLE = "bridge_sample.jsonl"
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

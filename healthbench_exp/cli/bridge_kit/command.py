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
Config errors are one line, exit 2, before any request (`cli.bridge_kit.arguments`; `--help` prints
this); a run that stops (its budget, a signal: `cli.bridge_kit.runs`) stops the kit with that
run's exit code, the command that finishes it and those of the runs not started.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

from healthbench_exp.cli.bridge_kit.arguments import wants_help
from healthbench_exp.cli.bridge_kit.planning import plan
from healthbench_exp.cli.bridge_kit.runs import run_to_its_end, stopped_lines
from healthbench_exp.config.bridge import BridgeConfig
from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core.run_end import Exit
from healthbench_exp.data.rows import DataError
from healthbench_exp.output.bridge_kit_files import check_lines, dry_run_lines, write_check
from healthbench_exp.tasks.bridge_result import bridge_check
from healthbench_exp.tasks.bridge_source import load_sources

CHECK = "bridge_check.json"


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

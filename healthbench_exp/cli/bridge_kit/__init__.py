"""The bridge kit (`python -m healthbench_exp.bridge_kit`, docs/bridge.md): a stratified sample
graded by the reference grader and a new judge, one jury run per model kept as a bridge source,
and the bridge checked across them.

Where each part lives, in the order a kit goes:

- `arguments`: its command line: the kit's own keys apart from the runs' overrides, each checked
  before anything is written (`split_arguments`, `wants_help`).
- `planning`: from the command line to the runs (`plan`, `Plan`): models and judges checked,
  every run's config composed and validated, the kit's folder, the sample drawn and written.
- `runs`: each run, the main command in a child process, waited for to its end, whatever stops
  it; the kit's stop passed on as a level, never a raw signal (`run_to_its_end`,
  `stopped_lines`).
- `command`: the command itself (`main`): plan, the runs one after another, the dry run's total
  or the sources and their check; its description is `--help`'s text.

Around it, outside this package: the sample (`tasks.bridge_sample`), the check
(`tasks.bridge_result.bridge_check`), the kit's files and printout
(`output.bridge_kit_files`) and the entry module (`healthbench_exp.bridge_kit`).
"""

from healthbench_exp.cli.bridge_kit.command import main
from healthbench_exp.cli.bridge_kit.planning import Plan, plan

__all__ = ["Plan", "main", "plan"]

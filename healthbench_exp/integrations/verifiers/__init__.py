"""HealthBench as a `verifiers` 0.4 environment on the harness's grading and scoring.

`vf-eval healthbench -m MODEL ...` finds it through the `healthbench` package (the taskset id);
from Python, `load_environment(...)` takes the seed environment's arguments. See docs/verifiers.md.
Needs the extra: `pip install "healthbench-exp[verifiers]"`.
"""

try:
    import verifiers.v1  # noqa: F401
except ModuleNotFoundError as exc:  # the base install: say which extra brings it
    raise ModuleNotFoundError(
        f"HealthBench's verifiers environment needs the extra ({exc}): "
        'pip install "healthbench-exp[verifiers]"',
        name=exc.name,
    ) from exc

from healthbench_exp.integrations.verifiers.env import (
    HealthBenchEnv,
    HealthBenchHarness,
    load_environment,
    make_dataset,
    records,
)
from healthbench_exp.integrations.verifiers.judge import HealthBenchTaskConfig
from healthbench_exp.integrations.verifiers.taskset import (
    HealthBenchTask,
    HealthBenchTaskset,
    HealthBenchTasksetConfig,
)

__all__ = [
    "HealthBenchEnv",
    "HealthBenchHarness",
    "HealthBenchTask",
    "HealthBenchTaskConfig",
    "HealthBenchTaskset",
    "HealthBenchTasksetConfig",
    "load_environment",
    "make_dataset",
    "records",
]

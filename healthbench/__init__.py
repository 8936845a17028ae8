"""The `healthbench` taskset of `verifiers` 0.4: `vf-eval healthbench -m MODEL ...`.

`verifiers` finds a taskset by id as an importable package that exports its Taskset subclass
(and here its bundled Harness and Env) in `__all__`. This package only re-exports them from
`healthbench_exp.integrations.verifiers`. Install: `pip install "healthbench-exp[verifiers]"`.
"""

from healthbench_exp.integrations.verifiers import (
    HealthBenchEnv,
    HealthBenchHarness,
    HealthBenchTaskset,
    load_environment,
    make_dataset,
)

__all__ = [
    "HealthBenchEnv",
    "HealthBenchHarness",
    "HealthBenchTaskset",
    "load_environment",
    "make_dataset",
]

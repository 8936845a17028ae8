"""healthbench-exp: a faithful, fast HealthBench harness (Hydra configs, asyncio engine).

The public API (what the tests and the docs use; everything else is internal):

- `run(config, output_dir)`: run one job from a `Config`, as `python -m healthbench_exp` does,
  writing the same outputs; returns the summary as `summary.json` holds it.
- `dry_run(config, output_dir)`: the cost estimate (`estimate.json`); nothing is sent.
- `load_config(overrides)`: `conf/` composed with command-line style overrides, as the CLI
  composes it: the `Config` and the resolved config as plain data.
- `Config`: the typed configuration (`config.schema`); `RunSummary`: the typed summary
  (`core.summary`, the schema of `summary.json`; `RunSummary.from_dict` reads one).
- Loaders: `load_examples` (HealthBench rows), `load_meta_rows` (meta-eval rows) and
  `work_items` (the rows to grade, with their given replies or none to sample).

Importing the package stays cheap: every submodule import (the built-in server's process, the
W&B worker's) runs this file first, so the names above are loaded on first use (PEP 562); the
imports under TYPE_CHECKING state the same dependencies for type checkers and the layer check.
"""

from __future__ import annotations

import importlib

from healthbench_exp.core.version import __version__

TYPE_CHECKING = False  # typing's own flag, without importing typing (type checkers read True)
if TYPE_CHECKING:
    from healthbench_exp.cli.compose import load_config
    from healthbench_exp.cli.job import dry_run, run
    from healthbench_exp.config.schema import Config
    from healthbench_exp.core.summary import RunSummary
    from healthbench_exp.data.completions import work_items
    from healthbench_exp.data.healthbench import load_examples
    from healthbench_exp.data.meta_eval import load_meta_rows

_PUBLIC = {
    "Config": "healthbench_exp.config.schema",
    "RunSummary": "healthbench_exp.core.summary",
    "dry_run": "healthbench_exp.cli.job",
    "load_config": "healthbench_exp.cli.compose",
    "load_examples": "healthbench_exp.data.healthbench",
    "load_meta_rows": "healthbench_exp.data.meta_eval",
    "run": "healthbench_exp.cli.job",
    "work_items": "healthbench_exp.data.completions",
}

__all__ = [
    "Config",
    "RunSummary",
    "__version__",
    "dry_run",
    "load_config",
    "load_examples",
    "load_meta_rows",
    "run",
    "work_items",
]


def __getattr__(name: str) -> object:
    """Load a public name from its module on first use (see the module docstring)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'healthbench_exp' has no attribute {name!r}")
    value = getattr(importlib.import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

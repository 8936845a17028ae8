"""`python -m healthbench_exp`: the only module that knows about Hydra.

It checks command-line overrides against the typed schema (naming the valid options on a typo),
composes `conf/`, converts the result once into the `Config` dataclasses and hands them to
`runner.run_eval`. Errors the user can fix are printed as one clear line, not a traceback.
"""

from __future__ import annotations

import difflib
import logging
import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from .config import Config, ConfigError, register_configs, unknown_option
from .data import DataError
from .endpoints import FatalEndpointError

log = logging.getLogger("healthbench_exp")

_SOURCE_CONF = Path(__file__).resolve().parent.parent / "conf"
CONFIG_PATH = str(_SOURCE_CONF) if _SOURCE_CONF.is_dir() else "conf"
# Hydra flags that take the next argument as their value.
_FLAGS_WITH_VALUE = {"--config-path", "-cp", "--config-name", "-cn", "--config-dir", "-cd"}
_GROUPS = {
    "task", "completions", "model", "judge", "difficulty", "sampling", "wandb", "experiment"
}  # fmt: skip
_QUIET_LOGGERS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2", "urllib3", "datasets")


def check_overrides(argv: list[str]) -> None:
    """Reject `key=value` overrides whose key the schema does not have, naming the valid ones.

    Group choices (`model=gpt41`), `hydra.*`, and `+`/`~` overrides are left to Hydra, which
    names the available options itself.
    """
    values_follow = False
    for arg in argv:
        if values_follow or arg.startswith("-"):
            values_follow = arg in _FLAGS_WITH_VALUE
            continue
        if "=" not in arg or arg[0] in "+~":
            continue
        key = arg.split("=", 1)[0].split("@", 1)[0]
        if key in _GROUPS or key.split(".")[0].split("/")[0] == "hydra":
            continue
        problem = unknown_option(key)
        if problem is None:
            continue
        where, valid = problem
        if not where:
            valid = sorted({*valid, *_GROUPS})
        failed_part = key.split(".")[where.count(".") + 1 if where else 0]
        guess = difflib.get_close_matches(failed_part, valid, n=1)
        hint = f" Did you mean '{guess[0]}'?" if guess else ""
        raise ConfigError(
            f"unknown config option '{key}'.{hint} Valid options under "
            f"{repr(where) if where else 'the top level'}: {', '.join(valid)}"
        )


def to_config(cfg: DictConfig) -> tuple[Config, dict[str, Any]]:
    """The typed Config and the resolved config as plain data (for summary.json and W&B)."""
    missing = sorted(OmegaConf.missing_keys(cfg))
    if missing:
        raise ConfigError(f"set a value for {', '.join(missing)} (it has no default)")
    try:
        config = OmegaConf.to_object(cfg)
    except MissingMandatoryValue as exc:
        raise ConfigError(f"set a value for {exc.full_key} (it has no default)") from None
    assert isinstance(config, Config)
    plain = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    assert isinstance(plain, dict)
    return config, plain  # type: ignore[return-value]


register_configs()


@hydra.main(version_base="1.3", config_path=CONFIG_PATH, config_name="config")
def app(cfg: DictConfig) -> float | None:
    """One Hydra job: evaluate and return the overall score (for sweepers).

    A job records `status.json` (running, completed or failed with the error). In a multirun a
    failed job returns None instead of raising, so the other jobs still run and the sweep summary
    (written at the end, see `aggregate`) lists it as failed and sets the exit status.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from . import reporting, runner, startup
    from .tracking import JobContext

    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    hydra_config = HydraConfig.get()
    output_dir = Path(hydra_config.runtime.output_dir)
    in_sweep = hydra_config.mode == RunMode.MULTIRUN
    foreign = reporting.foreign_files(output_dir)
    if foreign:
        print(
            f"error: refusing to write into {output_dir}: it holds files that are not from "
            f"healthbench-exp ({', '.join(foreign[:5])}); choose another hydra.run.dir",
            file=sys.stderr,
        )
        raise SystemExit(2)
    fresh = startup.is_fresh(output_dir)  # a failed start leaves only its log in a fresh one
    reporting.write_status(output_dir, "running")
    try:
        config, plain = to_config(cfg)
        job = JobContext(
            overrides=list(hydra_config.overrides.task),
            sweep_dir=hydra_config.sweep.dir if in_sweep else None,
            job_name=hydra_config.job.name,
        )
        if config.dry_run:
            from .estimate import format_estimate

            estimate = runner.dry_run(config, output_dir, plain)
            print(format_estimate(estimate, output_dir))
            reporting.write_status(output_dir, "dry_run")
            return None
        summary = runner.run_eval(config, output_dir, plain, job)
    except (ConfigError, DataError, FatalEndpointError) as exc:
        reporting.write_status(output_dir, "failed", str(exc))
        log.error("%s", exc)
        print(f"error: {exc}", file=sys.stderr)
        if in_sweep:  # the sweep summary lists the job as failed from its status.json
            return None
        if fresh:
            startup.discard_unstarted(output_dir)
        raise SystemExit(2) from None
    except Exception as exc:
        reporting.write_status(output_dir, "failed", f"{type(exc).__name__}: {exc}")
        if in_sweep:
            log.exception("job failed")
            return None
        if fresh:
            startup.discard_unstarted(output_dir)
        raise
    print(reporting.format_report(summary))
    print(f"\noutputs: {output_dir}")
    counts = summary["counts"]
    failed_share = counts["rows_failed"] / counts["rows"] if counts["rows"] else 0.0
    if summary.get("budget") and summary["budget"]["stopped"]:
        status, code = "partial", 4
        message = (
            f"budget.max_usd={config.budget.max_usd:g} reached: {counts['rows_not_run']} of "
            f"{counts['rows']} rows not run; finish with: python -m healthbench_exp "
            f"resume={output_dir} [budget.max_usd=...]"
        )
    elif failed_share > config.runner.max_failure_fraction:
        status, code = "failed", 3
        message = (
            f"{counts['rows_failed']} of {counts['rows']} rows failed ({failed_share:.1%}), "
            f"more than runner.max_failure_fraction={config.runner.max_failure_fraction}; the "
            f"others are scored in {output_dir}"
        )
    else:
        reporting.write_status(output_dir, "completed")
        return summary["metrics"].get("score")
    reporting.write_status(output_dir, status, message)
    print(f"error: {message}", file=sys.stderr)
    if in_sweep:
        return None
    raise SystemExit(code)


def resume_arguments(argv: list[str]) -> list[str]:
    """`resume=<run dir>` becomes that run's own overrides plus `hydra.run.dir=<run dir>`.

    The run then recomposes the same config, and the response cache answers every call that
    finished before it stopped; only the rest are sent. Other `key=value` arguments replace the
    run's own value of that key (say, a larger `budget.max_usd`).
    """
    resume = [a for a in argv if a.startswith("resume=")]
    if not resume:
        return argv
    extra = [a for a in argv if not a.startswith("resume=")]
    if len(resume) > 1 or any("=" not in a or a.startswith("-") for a in extra):
        raise ConfigError(
            "resume=<run dir> reruns that run's config; it takes only key=value overrides besides"
        )
    run_dir = Path(resume[0].split("=", 1)[1]).expanduser()
    overrides_file = run_dir / ".hydra" / "overrides.yaml"
    if not overrides_file.is_file() or not (run_dir / "status.json").is_file():
        raise ConfigError(
            f"{run_dir} is not a healthbench-exp run directory (no .hydra/overrides.yaml and "
            "status.json there)"
        )
    replaced = {a.split("=", 1)[0].lstrip("+~") for a in extra} | {"hydra.run.dir"}
    overrides = [str(o) for o in OmegaConf.load(overrides_file)]
    return [
        *(o for o in overrides if o.split("=", 1)[0].lstrip("+~") not in replaced),
        *extra,
        f"hydra.run.dir={run_dir}",
    ]


def main() -> None:
    try:
        sys.argv[1:] = resume_arguments(sys.argv[1:])
        check_overrides(sys.argv[1:])
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    app()


if __name__ == "__main__":
    main()

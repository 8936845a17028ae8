"""A sweep's jobs as Hydra planned them, read back from its `multirun.yaml` (as Hydra writes it:
the sweep's overrides and the sweeper's params, unresolved), and the row of a job never started."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from healthbench_exp.sweep.jobs import find_jobs, sweep_context
from healthbench_exp.sweep.planned import finish_command, planned_jobs

BASIC = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def write_multirun(
    sweep: Path, task: list[str], params: dict[str, str] | None = None, **hydra: object
) -> None:
    sweep.mkdir(parents=True, exist_ok=True)
    config = {
        "hydra": {
            "sweep": {"dir": str(sweep), "subdir": "${hydra.job.num}"},
            "sweeper": {"_target_": BASIC, "max_batch_size": None, "params": params},
            "overrides": {"task": task},
            **hydra,
        },
        "sampling": {"temperature": 0.0, "num_examples": 4},
        "judge": {"name": "offline-judge"},
    }
    OmegaConf.save(OmegaConf.create(config), sweep / "multirun.yaml")


def test_the_jobs_are_the_product_of_the_sweeps_values_in_hydras_order(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    write_multirun(sweep, ["experiment=demo", "sampling.temperature=0,0.5"], {"seed": "1,2"})
    assert planned_jobs(sweep) == {
        sweep / "0": ["seed=1", "experiment=demo", "sampling.temperature=0"],
        sweep / "1": ["seed=1", "experiment=demo", "sampling.temperature=0.5"],
        sweep / "2": ["seed=2", "experiment=demo", "sampling.temperature=0"],
        sweep / "3": ["seed=2", "experiment=demo", "sampling.temperature=0.5"],
    }


def test_another_layout_or_no_file_plans_nothing(tmp_path: Path) -> None:
    assert planned_jobs(tmp_path) is None
    write_multirun(tmp_path / "named", ["a=1,2"])
    data = OmegaConf.load(tmp_path / "named" / "multirun.yaml")
    data.hydra.sweep.subdir = "${hydra.job.override_dirname}"
    OmegaConf.save(data, tmp_path / "named" / "multirun.yaml")
    assert planned_jobs(tmp_path / "named") is None


def test_a_job_never_started_is_listed_with_its_settings_and_its_command(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    write_multirun(sweep, ["experiment=demo", "sampling.temperature=0,0.5"])
    jobs = find_jobs(sweep)
    assert [(j.name, j.status) for j in jobs] == [("0", "not_started"), ("1", "not_started")]
    assert jobs[1].settings.sampling is not None and jobs[1].settings.sampling.temperature == 0.5
    assert finish_command(jobs[1].path, jobs[1].status, jobs[1].overrides) == (
        "python -m healthbench_exp experiment=demo sampling.temperature=0.5 "
        f"hydra.run.dir={sweep / '1'}"
    )
    fields = dict(sweep_context(jobs)["fields"])
    assert fields["runs"] == "2 (2 not_started)"
    assert fields["count"] == "none finished; 2 of 2 runs not finished"
    assert fields["cost"] == "$0.0000"  # nothing paid: not "unknown"


def test_a_job_whose_swept_key_is_a_config_group_has_no_guessed_settings(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    write_multirun(sweep, ["judge=offline,gpt41"])
    assert [j.config for j in find_jobs(sweep)] == [{}, {}]

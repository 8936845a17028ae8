"""`bridge.method` (`config.bridge.BridgeMethod`): an Enum Hydra checks, validated once, at
composition; each value names an estimator of `grading.bridge.ESTIMATORS`."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from healthbench_exp.config.bridge import BridgeConfig, BridgeMethod
from healthbench_exp.grading.bridge import ESTIMATORS
from tests.e2e.test_e2e import run_cli


def test_each_method_names_an_estimator_and_label_shift_is_the_default() -> None:
    assert {m.value for m in BridgeMethod} == set(ESTIMATORS)
    assert BridgeConfig().method is BridgeMethod.label_shift


def test_the_schema_takes_a_methods_name_and_refuses_any_other() -> None:
    schema = OmegaConf.structured(BridgeConfig)
    chosen = OmegaConf.to_object(OmegaConf.merge(schema, {"method": "calibration"}))
    assert isinstance(chosen, BridgeConfig) and chosen.method is BridgeMethod.calibration
    with pytest.raises(ValidationError):
        OmegaConf.merge(schema, {"method": "q_table"})


def test_an_unknown_method_is_one_line_exit_2_before_anything_runs(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = run_cli(
        "experiment=demo", "wandb=disabled", "bridge.method=q_table", f"hydra.run.dir={run_dir}"
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "error: bridge.method=q_table: bridge.method takes one of label_shift, calibration, "
        "not 'q_table'\n"
    )
    assert not run_dir.exists()

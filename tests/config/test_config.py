"""Every config option composes into typed dataclasses; typos and bad values are rejected."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ValidationError

from healthbench_exp.cli.app import check_overrides, to_config
from healthbench_exp.cli.hydra_schema import register_configs
from healthbench_exp.config.checks import validate
from healthbench_exp.config.schema import (
    MISSING,
    REFERENCE_SYSTEM_MESSAGE,
    Config,
    ConfigError,
    DataSource,
    WandbMode,
)
from tests import zygote

CONF = Path(__file__).resolve().parents[2] / "healthbench_exp" / "conf"
register_configs()


def composed(*overrides: str) -> Config:
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(config_name="config", overrides=list(overrides))
    config, plain = to_config(cfg)
    assert isinstance(plain, dict) and "hydra" not in plain
    return config


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF / group).glob("*.yaml"))


def test_defaults_are_the_reference_protocol() -> None:
    config = composed()
    assert config.model.name == "gpt-4.1-mini-2025-04-14"
    assert config.judge.name == "gpt-4.1-2025-04-14"
    assert (config.judge.temperature, config.judge.max_tokens) == (0.5, 2048)
    assert config.judge.system_message == config.model.system_message == REFERENCE_SYSTEM_MESSAGE
    assert (config.sampling.temperature, config.sampling.max_tokens, config.sampling.seed) == (
        0.5,
        2048,
        0,
    )
    # the official simple-evals file, sha256-checked (the mirror is dataset.source=hf)
    assert config.dataset.source is DataSource.openai
    assert config.dataset.openai_file == "2025-05-07-06-14-12_oss_eval.jsonl"
    assert config.dataset.official_rows == 5000
    assert config.dataset.hf_repo == "neuralleap/healthbench-regular"
    assert config.wandb.mode is WandbMode.auto


@pytest.mark.parametrize(
    "group", ["model", "judge", "difficulty", "sampling", "wandb", "experiment"]
)
def test_every_option_composes(group: str) -> None:
    names = options(group)
    assert names, group
    for name in names:
        overrides = [f"{group}={name}"]
        if name in ("openai_compatible", "vllm") and group in ("model", "judge"):  # name: ???
            overrides.append(f"{group}.name=my-model")
        config = composed(*overrides)
        validate(config)
    assert {"gpt41mini", "gpt41", "gpt4o", "o3", "o4mini", "openai_compatible", "offline"} <= set(
        options("model")
    )
    assert {"gpt41", "gpt41mini", "o4mini", "openai_compatible", "offline"} <= set(options("judge"))
    assert {"all", "hard", "consensus", "professional", "sample"} <= set(options("difficulty"))


def test_every_yaml_starts_with_a_comment() -> None:
    for path in CONF.rglob("*.yaml"):
        first = path.read_text().lstrip().splitlines()[0]
        assert first.startswith("#"), path


def test_difficulties_and_presets() -> None:
    hard = composed("difficulty=hard")
    assert hard.dataset.hf_repo == "neuralleap/healthbench-hard"
    assert hard.dataset.sha256 == "b0320430e5cd974e746585594c1dd10b5a3fc2aff9c72b26106c2c4a069d74e9"
    demo = composed("experiment=demo")
    assert demo.model.builtin and demo.judge.builtin
    assert demo.dataset.source is DataSource.bundled
    assert demo.wandb.mode is WandbMode.offline
    o3 = composed("model=o3")
    assert o3.model.reasoning
    official = composed("difficulty=consensus")
    assert official.dataset.source is DataSource.openai
    assert official.dataset.openai_file == "consensus_2025-05-09-20-00-46.jsonl"
    assert official.dataset.official_rows == 3671
    mirror = composed("difficulty=consensus", "dataset.source=hf")
    assert mirror.dataset.hf_repo == "neuralleap/healthbench-consensus"
    counts = {d: composed(f"difficulty={d}").dataset.official_rows for d in ("all", "hard")}
    assert counts == {"all": 5000, "hard": 1000}
    for difficulty in ("all", "hard", "consensus"):
        assert composed(f"difficulty={difficulty}").dataset.source is DataSource.openai


def test_professional_preset() -> None:
    """OpenAI's own copy on Hugging Face; the bundled Professional sample offline."""
    pro = composed("difficulty=professional")
    assert pro.dataset.source is DataSource.hf
    assert pro.dataset.hf_repo == "openai/healthbench-professional"
    assert pro.dataset.hf_split == "test"
    assert pro.dataset.official_rows == 525 and pro.dataset.openai_file is None
    offline = composed("difficulty=professional", "dataset.source=bundled")
    assert offline.dataset.bundled_file == "professional_sample.jsonl"
    assert composed("difficulty=sample").dataset.bundled_file == "sample.jsonl"


def test_openai_compatible_needs_a_model_name() -> None:
    with pytest.raises(Exception, match=r"model\.name"):
        composed("model=openai_compatible")


def test_unknown_group_option_names_the_available_ones() -> None:
    with pytest.raises(ConfigCompositionException) as error:
        composed("model=gpt5")
    assert "gpt41mini" in str(error.value) and "offline" in str(error.value)


def test_wrong_type_and_bad_enum_are_rejected() -> None:
    with pytest.raises(ConfigCompositionException) as error:
        composed("sampling.max_tokens=lots")
    assert isinstance(error.value.__cause__, ValidationError)
    with pytest.raises(ConfigCompositionException) as error:
        composed("dataset.source=ftp")
    assert "hf" in str(error.value.__cause__) and "openai" in str(error.value.__cause__)


def test_unknown_override_names_the_valid_options() -> None:
    with pytest.raises(ConfigError) as error:
        check_overrides(["sampling.temprature=0.7"])
    message = str(error.value)
    assert "unknown config option 'sampling.temprature'" in message
    assert "Did you mean 'temperature'?" in message
    assert "num_examples" in message and "rollouts_per_example" in message
    with pytest.raises(
        ConfigError,
        match=(
            r"Did you mean 'runner'\?.*"
            r"the top level: bridge, budget, cache, calibration, completions, dataset"
        ),
    ):
        check_overrides(["runer.max_concurrent=4"])
    with pytest.raises(ConfigError, match="Valid options under 'model': api, api_key_env"):
        check_overrides(["--config-name", "config", "model.api_key=sk-x"])


def test_known_overrides_and_flags_pass_the_check() -> None:
    check_overrides(
        [
            "-m",
            "--config-name",
            "config",
            "model=gpt41",
            "model.extra_body.reasoning_effort=high",
            "sampling.temperature=0,0.7",
            "hydra.verbose=true",
            "runner.max_concurrent=4",
        ]
    )


def test_validate_rejects_out_of_range_values() -> None:
    config = composed("runner.max_concurrent=0")
    with pytest.raises(ConfigError, match=r"runner\.max_concurrent must be >= 1"):
        validate(config)
    config = composed("offline_server.error_rate=1.5")
    with pytest.raises(ConfigError, match=r"error_rate must be in \[0, 1\]"):
        validate(config)


def test_missing_model_name_is_reported_by_the_cli(tmp_path) -> None:

    result = zygote.run("model=openai_compatible", f"hydra.run.dir={tmp_path}", timeout=120)
    assert result.returncode != 0
    assert "model.name" in result.stderr + result.stdout


def test_the_schema_needs_no_hydra() -> None:
    """`config` is plain dataclasses (only the CLI imports Hydra): its MISSING is Hydra's, so an
    endpoint without a name is still refused when composed."""
    import ast

    import omegaconf

    assert MISSING == omegaconf.MISSING
    for module in (CONF.parent / "config").glob("*.py"):
        tree = ast.parse(module.read_text(encoding="utf-8"))
        imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        assert not [m for m in imported if m.split(".")[0] in ("hydra", "omegaconf")], module

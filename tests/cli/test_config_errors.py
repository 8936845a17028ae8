"""Configuration mistakes on the command line: exit 2, one line naming the key, nothing written.

End to end: `python -m healthbench_exp` in a subprocess, as a user runs it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_e2e import run_cli

DEMO = ("experiment=demo", "wandb=disabled", "runner.progress=false")


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (  # ran at T=0.5 with the typo stored in the config
            "+sampling.temprature=0",
            "unknown config option 'sampling.temprature' (added with '+': the schema has no "
            "such key). Did you mean 'temperature'?",
        ),
        (  # exit 1 with Hydra's several lines
            "difficulty=foo",
            "difficulty=foo: difficulty has no option 'foo'. Valid choices for difficulty: "
            "all, consensus, hard, professional, sample",
        ),
        ("sampling.temperature=hot", "sampling.temperature takes a number or null, not 'hot'"),
        ("task.kind=evl", "task.kind takes one of eval, meta_eval, not 'evl'"),
        ("+sampling.temperature=0", "set it without '+' (sampling.temperature=0)"),
        (  # the brackets forgotten: Hydra's "Error merging override ... ListConfig", exit 1
            "jury=gpt54",
            "jury=gpt54: jury takes a list, not 'gpt54'; write jury=[gpt54]",
        ),
    ],
)
def test_a_configuration_mistake_exits_2_with_one_line_naming_the_key(
    tmp_path: Path, override: str, expected: str
) -> None:
    run_dir = tmp_path / "run"
    result = run_cli(*DEMO, override, f"hydra.run.dir={run_dir}")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    assert expected in result.stderr
    assert not run_dir.exists()  # refused before Hydra started: not even a log


def test_a_sweep_with_a_bad_choice_exits_2_before_any_job(tmp_path: Path) -> None:
    sweep_dir = tmp_path / "sweep"
    result = run_cli("-m", *DEMO, "difficulty=sample,hardd", f"hydra.sweep.dir={sweep_dir}")
    assert result.returncode == 2, result.stderr
    assert "Did you mean 'hard'?" in result.stderr and result.stderr.count("\n") == 1
    assert not sweep_dir.exists()


def test_more_examples_than_the_data_has_says_once_how_many_run(tmp_path: Path) -> None:
    result = run_cli(*DEMO, "sampling.num_examples=100000", f"hydra.run.dir={tmp_path / 'run'}")
    assert result.returncode == 0, result.stderr
    said = "sampling.num_examples=100000: the data has 24 rows; running all 24"
    assert (result.stdout + result.stderr).count(said) == 1
    assert "n=24" in result.stdout


def _one_line(result: subprocess.CompletedProcess) -> str:
    """The error a user reads: exit 2, one line starting 'error: ' (Hydra's lines: exit 1)."""
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: "), result.stderr
    return result.stderr.strip()


def _user_conf(tmp_path: Path) -> Path:
    """A config directory of the user's: a preset with bad YAML, one whose defaults list names
    a preset that does not exist, and a good one."""
    conf = tmp_path / "my_conf"
    (conf / "judge").mkdir(parents=True)
    (conf / "judge" / "broken.yaml").write_text("name: x\n  bad: [\n")
    (conf / "judge" / "orphan.yaml").write_text("defaults:\n  - nothere\nname: y\n")
    (conf / "judge" / "offline_b.yaml").write_text("defaults:\n  - offline\nname: offline-b\n")
    return conf


# every kind of Hydra composition error: (kind, arguments, what the one line says)
KINDS = [
    (  # Hydra's five-line "Ambiguous value", exit 1
        "ambiguous value",
        ["model=offline,gpt41"],
        "model=offline,gpt41: a comma list sweeps (one run per value), and only with -m: "
        "python -m healthbench_exp -m experiment=demo",
    ),
    (  # Hydra's "Key 'seed' is not in struct", exit 1
        "missing +",
        ["model.extra_body.seed=1"],
        "model.extra_body.seed=1: model.extra_body has no key 'seed' yet; a key the config does "
        "not have is added with '+': write +model.extra_body.seed=1",
    ),
    (  # a group Hydra checks itself (the harness's own groups are checked before it starts)
        "unknown group option",
        ["hydra/launcher=nope"],
        "hydra/launcher=nope: hydra/launcher has no option 'nope'. Valid choices for "
        "hydra/launcher: basic, healthbench_slurm, joblib",
    ),
    (
        "unknown option in a user's defaults list",
        ["hydra.searchpath=[file://{conf}]", "judge=orphan"],
        "judge/orphan.yaml names 'judge/nothere' in its defaults list, which no config "
        "directory holds (searched: ",
    ),
    (  # a traceback ending "InterpolationKeyError", exit 1
        "interpolation",
        ["sampling.temperature=${{foo}}"],
        "sampling.temperature=${{foo}}: Interpolation key 'foo' not found; an interpolation "
        "names a key of the config",
    ),
    (  # a yaml.scanner.ScannerError traceback, exit 1
        "bad YAML (hydra.searchpath)",
        ["hydra.searchpath=[file://{conf}]", "judge=broken"],
        "{conf}/judge/broken.yaml, line 2, column 6: not valid YAML (mapping values are not "
        "allowed here)",
    ),
    (
        "bad YAML (--config-dir)",
        ["--config-dir={conf}", "judge=broken"],
        "{conf}/judge/broken.yaml, line 2, column 6: not valid YAML",
    ),
]


@pytest.mark.parametrize(("kind", "args", "expected"), KINDS, ids=[k[0] for k in KINDS])
def test_every_kind_of_hydra_composition_error_is_one_line_exit_2(
    tmp_path: Path, kind: str, args: list[str], expected: str
) -> None:
    conf = _user_conf(tmp_path)
    run_dir = tmp_path / "run"
    argv = [a.format(conf=conf) for a in args]
    flags = [a for a in argv if a.startswith("-")]
    rest = [a for a in argv if not a.startswith("-")]
    result = run_cli(*flags, *DEMO, *rest, f"hydra.run.dir={run_dir}")
    assert expected.format(conf=conf) in _one_line(result)
    # found while composing: nothing written; an interpolation, when the job reads its config:
    # the run directory keeps its log only
    left = sorted(p.name for p in run_dir.iterdir()) if run_dir.exists() else []
    assert left == (["healthbench.log"] if kind == "interpolation" else []), left


def test_a_preset_of_a_config_dir_is_a_valid_choice(tmp_path: Path) -> None:
    """`--config-dir` adds presets as `hydra.searchpath` does: a dry run of one composes."""
    conf = _user_conf(tmp_path)
    result = run_cli(
        f"--config-dir={conf}", *DEMO, "judge=offline_b", "dry_run=true",
        f"hydra.run.dir={tmp_path / 'run'}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_a_jury_given_as_a_comma_list_is_shown_whole(tmp_path: Path) -> None:
    """`jury=a,b` answered "write jury=[a]": the second judge was dropped from the advice."""
    result = run_cli(*DEMO, "jury=gpt54,gpt41mini", f"hydra.run.dir={tmp_path / 'run'}")
    line = _one_line(result)
    assert "write jury=[gpt54,gpt41mini]" in line and "jury=[gpt54]" not in line
    swept = run_cli("-m", *DEMO, "jury=gpt54,gpt41mini", f"hydra.sweep.dir={tmp_path / 's'}")
    line = _one_line(swept)
    assert "write jury=[gpt54,gpt41mini]" in line and "-m jury=[gpt54],[gpt41mini]" in line


def test_an_interpolation_in_the_run_directory_is_one_line_exit_2(tmp_path: Path) -> None:
    """Hydra turned each callback's error into a warning of several lines, then raised."""
    result = run_cli(*DEMO, f"hydra.run.dir={tmp_path}/${{nokey}}")
    line = _one_line(result)
    assert f"hydra.run.dir={tmp_path}/${{nokey}}: Interpolation key 'nokey' not found" in line
    assert list(tmp_path.iterdir()) == []

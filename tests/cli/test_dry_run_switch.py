"""`dry_run=true` keeps working as users type it, now that `dry_run` is a node with a pilot."""

from __future__ import annotations

import pytest

from healthbench_exp import load_config
from healthbench_exp.cli.compose import translate_dry_run


@pytest.mark.parametrize(
    ("override", "enabled", "pilot"),
    [
        ("dry_run=true", True, 0),
        ("dry_run=True", True, 0),
        ("dry_run=false", False, 0),
        ("dry_run=1", True, 0),  # every form the schema's bool reads, as dry_run.enabled=
        ("dry_run=yes", True, 0),
        ("+dry_run=on", True, 0),
        ("dry_run=0", False, 0),
        ("dry_run={enabled:true}", True, 0),  # a whole node, kept as it is
        ("dry_run.enabled=true", True, 0),
        ("dry_run.pilot=3", False, 3),
    ],
)
def test_dry_run_overrides_compose(override: str, enabled: bool, pilot: int) -> None:
    config = load_config(["experiment=demo", override])[0]
    assert config.dry_run.enabled is enabled and config.dry_run.pilot == pilot
    assert config.dry_run.requested is (enabled or pilot > 0)  # a pilot implies a dry run


def test_only_the_boolean_form_is_translated() -> None:
    assert translate_dry_run(
        ["dry_run=true", "model=gpt41", "dry_run.pilot=2", "x=dry_run", "dry_run={pilot:2}"]
    ) == [
        "dry_run.enabled=true",
        "model=gpt41",
        "dry_run.pilot=2",
        "x=dry_run",
        "dry_run={pilot:2}",
    ]

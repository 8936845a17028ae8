"""The bridge kit's command line (`cli.bridge_kit`): its own keys apart from the runs'
overrides, each checked before anything is written, and its usage (`--help`).

Every mistake is a ConfigError of one line that names what is valid: an argument that is not
`key=value` (the kit's own keys and where the rest go), a key neither the kit's nor the runs'
(with a did-you-mean over both), the keys the kit sets itself, a switch or number that is not
one, `model=` beside `models=`. The runs' overrides are checked as the main command checks them
(`cli.overrides.check_overrides`), so a mistyped option is refused before the sample is drawn.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, fields

from healthbench_exp.cli.compose import translate_dry_run
from healthbench_exp.cli.overrides import GROUPS, check_overrides
from healthbench_exp.config.schema import Config, ConfigError

# the kit's own keys, in the order the usage lists them
KIT_KEYS = ("new_judge", "models", "examples", "seed", "batch", "old_judge", "out")
HELP = ("-h", "--help")
TRUE = ("true", "1", "yes", "on")
FALSE = ("false", "0", "no", "off")
# the keys the kit sets for each run itself: refused from the user, with what to give instead
SET_BY_KIT = ("judge", "jury", "hydra")
NOT_FOR_THE_KIT = {  # the main command's arguments that have no meaning for the kit
    "resume": "resume a model's run with python -m healthbench_exp resume=<out>/source_<model>",
    "regrade": "regrade a run with python -m healthbench_exp regrade=<run dir> judge=<preset>",
}


def kit_keys_text() -> str:
    """The kit's own keys, and where every other `key=value` goes: for its error lines."""
    return (
        f"its own keys are {', '.join(KIT_KEYS)} (model= for one model); every other key=value "
        "is an override of each model's run, as python -m healthbench_exp takes it "
        "(bridge_kit --help)"
    )


@dataclass
class KitArguments:
    """The command line, split: the kit's own keys (as typed), the runs' overrides, and the
    overrides that pick the data sampled from (`dataset.*`, which the runs do not get: they
    read the sample)."""

    kit: dict[str, str]
    runs: list[str]
    data: list[str]


def wants_help(argv: Sequence[str]) -> bool:
    """Whether the command line asks for the usage (`-h`, `--help`)."""
    return any(argument in HELP for argument in argv)


def _unknown_root(root: str) -> ConfigError | None:
    """A key that is neither the kit's nor a top-level option of the runs (None: it is one)."""
    options = {f.name for f in fields(Config)} | set(GROUPS)
    if root in options or root in KIT_KEYS or root in ("model", "dataset", "hydra"):
        return None
    guess = difflib.get_close_matches(root, [*KIT_KEYS, *sorted(options)], n=1)
    hint = f" Did you mean '{guess[0]}'?" if guess else ""
    return ConfigError(f"unknown key '{root}'.{hint} The bridge kit: {kit_keys_text()}")


def split_arguments(argv: Sequence[str]) -> KitArguments:
    """The kit's keys, the runs' overrides and the data's (`KitArguments`); a ConfigError (one
    line) for the first argument that is none of these, and for an override of the runs that
    the main command would refuse (`check_overrides`)."""
    kit: dict[str, str] = {}
    runs: list[str] = []
    data: list[str] = []
    for argument in argv:
        key, sep, value = argument.partition("=")
        if not sep or not key:
            raise ConfigError(f"bridge_kit takes key=value arguments, got {argument!r}; "
                              f"{kit_keys_text()}")  # fmt: skip
        root = key.split(".")[0].lstrip("+~")
        if root in NOT_FOR_THE_KIT:
            raise ConfigError(f"bridge_kit does not take {root}=; {NOT_FOR_THE_KIT[root]}")
        problem = _unknown_root(root)
        if problem is not None:
            raise problem
        if key in KIT_KEYS:
            kit[key] = value
        elif key == "model":  # one model: as `models=<preset>`
            if "models" in kit or any(a.startswith("models=") for a in argv):
                raise ConfigError("give models=<a,b,c> or model=<preset> (one model), not both")
            kit["models"] = value
        elif root == "dataset":
            data.append(argument)
        elif root in SET_BY_KIT and not key.startswith(("judge.name", "hydra.searchpath")):
            raise ConfigError(
                f"bridge_kit sets {root} itself; give new_judge=, old_judge= (and batch=true)"
            )
        else:
            runs.append(argument)
    if not kit.get("new_judge", "").strip():
        raise ConfigError("bridge_kit needs new_judge=<judge preset> (the judge to bridge to)")
    check_overrides(translate_dry_run([*runs, *data]))  # as the main command checks them
    return KitArguments(kit, runs, data)


def whole_number(kit: dict[str, str], key: str, default: int, least: int) -> int:
    """The kit's key `key` as a whole number of at least `least` (`default` when not given)."""
    try:
        value = int(kit.get(key, default))
    except ValueError:
        raise ConfigError(f"{key} must be a whole number, got {kit[key]!r}") from None
    if value < least:
        raise ConfigError(f"{key} must be at least {least}, got {value}")
    return value


def switch(kit: dict[str, str], key: str) -> bool:
    """The kit's key `key` as true or false (false when not given)."""
    value = kit.get(key, "false").strip().lower()
    if value not in (*TRUE, *FALSE):
        raise ConfigError(f"{key} takes true or false, not {kit[key]!r}")
    return value in TRUE

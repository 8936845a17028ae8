"""Which length penalty a run reports its `length_adjusted_score` with (SPEC 7.4).

Every eval reports `length_adjusted_score` beside the plain score. The penalty per 500
characters is `scoring.length_penalty_per_500_chars` when given, else the published value of the
set that `dataset.difficulty` names (also when `dataset.path` points at a local copy of it), else
none: the bundled `sample` and any other label get no length-adjusted score. The center is
`scoring.length_center_chars` (2000, as published).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# OpenAI, GPT-5.5 system card, as quoted by the README of MedARC's HealthBench environment for
# verifiers (SPEC 7.4; not verified against the paper)
PUBLISHED_PENALTIES: dict[str, float] = {
    "all": 0.0299,
    "hard": 0.0392,
    "consensus": 0.0020,
    "professional": 0.0147,
}
PUBLISHED_SOURCE = (
    "published per-set penalty (OpenAI GPT-5.5 system card, as quoted by MedARC's HealthBench "
    "environment for verifiers; SPEC 7.4)"
)
OPTION_SOURCE = "scoring.length_penalty_per_500_chars"


@dataclass(frozen=True)
class LengthPenalty:
    """The length adjustment a run applies: penalty per 500 characters around `center_chars`,
    the set it belongs to (`dataset.difficulty`) and where the value comes from."""

    per_500_chars: float
    center_chars: int
    set: str
    source: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def length_penalty(given: float | None, center_chars: int, set_label: str) -> LengthPenalty | None:
    """The run's length penalty: `given` (`scoring.length_penalty_per_500_chars`) when set, else
    the published value of the set `set_label` (`dataset.difficulty`) names, else None (no
    `length_adjusted_score`)."""
    if given is not None:
        value, source = given, OPTION_SOURCE
    elif set_label in PUBLISHED_PENALTIES:
        value, source = PUBLISHED_PENALTIES[set_label], PUBLISHED_SOURCE
    else:
        return None
    return LengthPenalty(value, center_chars, set_label, source)

"""The published HealthBench scores shipped with the package (`published.csv`), as typed rows.

Each row is one number a source published, with the source's own words kept (`model`,
`subset`, `uncertainty`, `grader`, `settings`, `status`) beside the typed fields the comparison
reads. A typed field that is None means the source does not state it: the comparison then
says so instead of assuming. `bench/published_derive.py` derives the typed columns from the
gathered file and documents each rule.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from enum import Enum
from importlib import resources

DATA_FILE = "published.csv"
OFFICIAL_SETS = ("all", "hard", "consensus", "professional")
# the sets' sizes (SPEC section 1; HealthBench Professional: 525)
SET_SIZES = {"all": 5000, "hard": 1000, "consensus": 3671, "professional": 525}


class UncertaintyKind(Enum):
    """What the source's stated uncertainty is."""

    RUNS_STD = "runs_std"  # the std over `runs` full runs; the value is their mean
    BOOTSTRAP_STD = "bootstrap_std"  # bootstrap std over examples within one run
    NONE = "none"  # none stated


@dataclass(frozen=True)
class Source:
    """Where a number was published, and how far it was checked."""

    title: str
    url: str | None  # None: the source has no URL that was found
    where: str  # the table or figure
    date: str  # as precise as the source gives it (YYYY, YYYY-MM or YYYY-MM-DD)
    status: str  # `read ...` in the source, or `quoted by X`
    checked: str  # `unchecked`: not re-read against the source in this version

    @property
    def quoted(self) -> bool:
        """The number was seen only in a secondary source."""
        return self.status.startswith("quoted")


@dataclass(frozen=True)
class PublishedRow:
    """One published number with its source and the settings the source states."""

    model: str  # as the source names it
    model_id: str | None  # the snapshot it is of; None: no documented snapshot (never matched)
    set: str  # all | hard | consensus | professional | meta_eval | other
    metric: str  # overall_score | length_adjusted_score | cluster:<c> | the variant's label
    subset: str  # the source's own label of the set
    value: float  # a fraction in [0, 1]
    approximate: bool  # read off a figure (`~` in the source)
    uncertainty: str  # as stated ("" where none)
    uncertainty_kind: UncertaintyKind
    uncertainty_value: float | None
    runs: int | None  # runs averaged (None: not stated)
    grader: str  # as stated
    grader_model: str | None  # None: not stated (or only presumed)
    grader_effort: str | None
    length_adjusted: bool | None  # None: not stated
    temperature: float | None
    max_tokens: int | None
    reasoning_effort: str | None
    api: str | None
    settings: str  # as stated
    n_examples: int | None
    source: Source

    @property
    def comparable_set(self) -> bool:
        """An official set's overall or length-adjusted score (what a run's headline is)."""
        return self.set in OFFICIAL_SETS and not self.metric.startswith("cluster:")


def _float(text: str) -> float | None:
    return float(text) if text else None


def _int(text: str) -> int | None:
    return int(text) if text else None


def _text(text: str) -> str | None:
    return text or None


def _bool(text: str) -> bool | None:
    if text not in ("true", "false", ""):
        raise ValueError(f"not a boolean: {text!r}")
    return None if not text else text == "true"


def parse_row(row: dict[str, str]) -> PublishedRow:
    """One CSV row as a typed row (ValueError: a field that is not of its type)."""
    return PublishedRow(
        model=row["model"],
        model_id=_text(row["model_id"]),
        set=row["set"],
        metric=row["metric"],
        subset=row["subset"],
        value=float(row["value"].removeprefix("~")),
        approximate=_bool(row["approximate"]) is True,
        uncertainty=row["uncertainty"],
        uncertainty_kind=UncertaintyKind(row["uncertainty_kind"]),
        uncertainty_value=_float(row["uncertainty_value"]),
        runs=_int(row["runs"]),
        grader=row["grader"],
        grader_model=_text(row["grader_model"]),
        grader_effort=_text(row["grader_effort"]),
        length_adjusted=_bool(row["length_adjusted"]),
        temperature=_float(row["temperature"]),
        max_tokens=_int(row["max_tokens"]),
        reasoning_effort=_text(row["reasoning_effort"]),
        api=_text(row["api"]),
        settings=row["settings"],
        n_examples=_int(row["n_examples"]),
        source=Source(
            title=row["source_title"],
            url=_text(row["source_url"]),
            where=row["source_where"],
            date=row["date"],
            status=row["status"],
            checked=row["checked"],
        ),
    )


@functools.cache
def published_rows() -> tuple[PublishedRow, ...]:
    """Every published row, in the file's order (read once)."""
    text = resources.files(__package__).joinpath(DATA_FILE).read_text(encoding="utf-8")
    return tuple(parse_row(row) for row in csv.DictReader(text.splitlines()))

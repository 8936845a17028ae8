"""The shipped published scores: every row sourced and typed, the gathered file carried over."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from healthbench_exp.published import model_id, published_rows
from healthbench_exp.published.table import OFFICIAL_SETS, UncertaintyKind

GATHERED = Path(__file__).resolve().parents[2] / "healthbench_exp" / "published" / "published.csv"


def test_every_row_is_sourced_and_typed() -> None:
    rows = published_rows()
    assert len(rows) == 528
    for row in rows:
        assert row.source.title and row.source.where and row.source.date, row
        assert re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?|\d{4}-\d{2}/\d{2}", row.source.date), row
        # a row without a URL is known only through whoever quoted it, or names its source
        assert row.source.url is None or row.source.url.startswith("https://"), row
        assert row.source.status.startswith(("read", "quoted")), row
        assert row.source.checked == "unchecked"  # not re-read here: no network in this build
        assert 0.0 <= row.value <= 1.0, row
        assert row.set in (*OFFICIAL_SETS, "consensus", "meta_eval", "other"), row
        if row.uncertainty_kind is not UncertaintyKind.NONE:
            assert row.uncertainty_value is not None and row.runs is not None, row
        if row.set in OFFICIAL_SETS and row.comparable_set:
            assert row.metric in ("overall_score", "length_adjusted_score"), row
            assert (row.metric == "length_adjusted_score") == (row.length_adjusted is True), row


def test_the_gathered_words_are_kept() -> None:
    """Each row keeps the source's own model name, subset, value, grader, settings and status."""
    with GATHERED.open(encoding="utf-8") as f:
        raw = list(csv.DictReader(f))
    for line, row in zip(raw, published_rows(), strict=True):
        assert (row.model, row.subset, row.grader, row.settings) == (
            line["model"],
            line["subset"],
            line["grader"],
            line["settings"],
        )
        assert row.value == float(line["value"].removeprefix("~"))
        assert row.source.status == line["status"]


def test_table_7_rows_state_their_run_to_run_std() -> None:
    """The paper's Table 7: GPT-4.1's 16-run mean 0.4778, std 0.0022 (read in the paper)."""
    (row,) = [
        r
        for r in published_rows()
        if r.model_id == "gpt-4.1-2025-04-14" and r.set == "all" and r.runs == 16
    ]
    assert (row.value, row.uncertainty_value, row.uncertainty_kind) == (
        0.4778,
        0.0022,
        UncertaintyKind.RUNS_STD,
    )
    assert row.grader_model == "gpt-4.1-2025-04-14" and row.temperature == 1.0
    assert row.length_adjusted is False


def test_table_8_has_37_clusters_for_nine_models() -> None:
    cells = [r for r in published_rows() if r.metric.startswith("cluster:")]
    assert len(cells) == 333
    assert len({r.model_id for r in cells}) == 9 and None not in {r.model_id for r in cells}
    assert len({r.metric for r in cells}) == 37


def test_model_identity_is_by_snapshot_and_documented_alias_only() -> None:
    assert model_id("gpt-4.1") == model_id("gpt-4.1-2025-04-14") == "gpt-4.1-2025-04-14"
    assert model_id("openai/gpt-4.1") == "gpt-4.1-2025-04-14"
    assert model_id("OpenAI/GPT-4.1-2025-04-14") == "gpt-4.1-2025-04-14"
    assert model_id("gpt-4.1-mini") == "gpt-4.1-mini"  # not GPT-4.1: no fuzzy match
    assert model_id("gpt-4o") == "gpt-4o"  # the alias moved: not the paper's 2024-08-06


def test_the_shipped_file_holds_every_gathered_row_unchanged() -> None:
    """Against the gathered file where the checkout has it (../shared/published)."""
    shared = GATHERED.parents[3] / "shared" / "published" / "published.csv"
    if not shared.exists():
        pytest.skip(f"{shared} is not in this checkout")
    with shared.open(encoding="utf-8") as f:
        gathered = list(csv.DictReader(f))
    with GATHERED.open(encoding="utf-8") as f:
        shipped = list(csv.DictReader(f))
    assert len(gathered) == len(shipped) == 528
    for before, after in zip(gathered, shipped, strict=True):
        moved = {k: v for k, v in before.items() if after[k] != v}
        # only a URL column that held a title moves (to source_title)
        assert set(moved) <= {"source_url"}, moved
        if moved:
            assert after["source_title"] == before["source_url"]

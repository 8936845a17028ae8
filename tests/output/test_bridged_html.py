"""report.html's bridged strata table (`output.html.bridged`): the `pooled` cell says which
rates a stratum pooled and why (revision 3), and the reasons alone in an older record."""

from __future__ import annotations

from healthbench_exp.core.bridged import Bridged, BridgeStratum, HoldoutError
from healthbench_exp.output.html.bridged import bridged_section


def record(*strata: BridgeStratum) -> Bridged:
    return Bridged(
        "label_shift", ["src"], "o", "n", 10, list(strata), {"bridged_score": 0.5},
        {"bridged_score": [0.4, 0.6]}, HoldoutError(None, None, 5), revision=3,
    )  # fmt: skip


def rates(stratum: str, pooled: list[str], which: str | None) -> BridgeStratum:
    return BridgeStratum(
        stratum, "negative", pooled=pooled, n_o_met=12, n_o_not=400, se=0.9, sp=0.8,
        run_n=40, run_met=5, pi=0.1, w_met=0.3, w_not=0.01, pooled_rates=which,
    )  # fmt: skip


def test_the_pooled_cell_names_the_rates_and_why() -> None:
    page = bridged_section(
        record(
            rates("axis:rare", ["few_o_met"], "se"),
            rates("axis:odd", ["few_o_met", "near_chance"], "both"),
            rates("axis:old", ["bridge"], None),  # a revision 2 record
        )
    )
    assert "<td>se: few_o_met</td>" in page
    assert "<td>both: few_o_met, near_chance</td>" in page
    assert "<td>bridge</td>" in page

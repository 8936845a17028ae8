"""A cost computed from a placeholder price (`price.as_of: "illustrative: ..."`, the demo's)
says so wherever it is shown: the console, report.html and a comparison of runs (issue 27
item 7); a cost from a real price does not."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_e2e import run_cli, run_module

REAL = ("model.price.as_of='2025-06 list price'", "judge.price.as_of='2025-06 list price'")


def demo(out: Path, *overrides: str):
    result = run_cli(
        "experiment=demo", "cache.enabled=false", "wandb.mode=disabled", *overrides,
        f"hydra.run.dir={out}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def test_illustrative_prices_are_named_wherever_their_cost_is_shown(tmp_path: Path) -> None:
    shown = demo(tmp_path / "demo").stdout
    assert "total cost $0.2210 (illustrative model and judge prices, not a provider's bill" in shown
    assert shown.count("cost $0.") == 3 and shown.count("(illustrative price)") == 2
    page = (tmp_path / "demo" / "report.html").read_text()
    assert "$0.2210 (illustrative model and judge prices" in page

    real = demo(tmp_path / "real", *REAL).stdout
    assert "total cost $0.2210\n" in real and "(illustrative" not in real
    assert "(illustrative" not in (tmp_path / "real" / "report.html").read_text()

    compared = run_module(
        "healthbench_exp.aggregate", str(tmp_path / "demo"), "--out", str(tmp_path / "cmp"),
        cwd=tmp_path,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    text = (tmp_path / "cmp" / "sweep_summary.md").read_text()
    assert "- cost: $0.2210 (from illustrative prices)" in text
    assert "Cost of the sweep: $0.2210 (from illustrative prices" in text
    assert "(from illustrative prices)" in (tmp_path / "cmp" / "report.html").read_text()

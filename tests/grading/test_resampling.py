"""`grading.resampling`: the bootstrap's one resampling loop, and its named result
(`core.intervals.BootstrapResult`), against numpy computed independently."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from healthbench_exp.core.intervals import BootstrapResult, Interval
from healthbench_exp.grading.resampling import bootstrap, bootstrap_draws


def test_each_population_is_drawn_anew_in_order_from_one_generator() -> None:
    x = np.arange(7, dtype=float)
    y = np.arange(4, dtype=float) * 10

    def total(i: np.ndarray, j: np.ndarray) -> float:
        return float(x[i].sum() + y[j].sum())

    rng = np.random.default_rng(11)  # what the helper must draw: 7 of x, then 4 of y, per draw
    expected = []
    for _ in range(25):
        i = rng.integers(0, 7, 7)
        j = rng.integers(0, 4, 4)
        expected.append(float(x[i].sum() + y[j].sum()))
    assert bootstrap_draws(total, (7, 4), 25, 11) == expected


def test_a_resample_where_the_statistic_is_undefined_is_left_out() -> None:
    rng = np.random.default_rng(2)
    kept = [m for m in (float(rng.integers(0, 3, 3).mean()) for _ in range(40)) if m != 0.0]

    def mean_unless_zero(i: np.ndarray) -> float | None:
        mean = float(i.mean())
        return None if mean == 0.0 else mean

    assert bootstrap_draws(mean_unless_zero, (3,), 40, 2) == kept
    assert bootstrap(lambda i: None, (3,), 10, 0, estimate=0.5) is None


def test_the_result_is_named_and_numpys() -> None:
    values = np.random.default_rng(0).normal(size=200)
    result = bootstrap(lambda i: float(values[i].mean()), (200,), 300, 4, estimate=values.mean())
    assert result is not None
    draws = bootstrap_draws(lambda i: float(values[i].mean()), (200,), 300, 4)
    low, high = np.percentile(draws, [2.5, 97.5])
    assert result == BootstrapResult(
        float(values.mean()), Interval(float(low), float(high)), result.std, 300
    )
    assert result.std == pytest.approx(float(np.std(draws)), rel=1e-12)
    assert BootstrapResult.of_draws(1.0, [1.0, 3.0]).std == 1.0  # ddof 0, by hand


DRAWS = frozenset({"integers", "randint", "randrange", "choice", "choices"})  # with replacement
PACKAGE = Path(__file__).resolve().parents[2] / "healthbench_exp"
# where rows are drawn with replacement: the one helper, and the bridge (a wing importing only
# core and numpy, its draws its own: said in grading.resampling's docstring)
DRAWN_IN = ("grading/resampling.py", "grading/bridge/")


def draws_with_replacement(tree: ast.AST) -> list[int]:
    """Lines calling a random draw with replacement (`rng.integers(...)`, `random.choice(...)`,
    ...); `secrets.choice` (a run name's letters) is no resample."""
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in DRAWS
        and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "secrets")
    ]


def test_rows_are_resampled_only_through_the_one_helper() -> None:
    found = {
        f"{path.relative_to(PACKAGE).as_posix()}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.relative_to(PACKAGE).as_posix().startswith(DRAWN_IN)
        for line in draws_with_replacement(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert found == set()
    # the check sees a draw: the helper's own module has them
    helper = (PACKAGE / "grading" / "resampling.py").read_text(encoding="utf-8")
    assert len(draws_with_replacement(ast.parse(helper))) == 2

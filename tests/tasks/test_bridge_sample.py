"""The bridge kit's sample (`tasks.bridge_sample`): seeded, every consensus cluster and axis of
the data represented, the rest drawn at random; too small to cover them all is refused."""

from __future__ import annotations

import pytest

from healthbench_exp.config.schema import ConfigError, DatasetConfig, DataSource
from healthbench_exp.data.healthbench import load_examples
from healthbench_exp.tasks.bridge_sample import stratified_sample


def strata(example) -> set[str]:
    return {t for c in example.rubrics for t in c.tags if t.split(":")[0] in ("cluster", "axis")}


def test_every_cluster_and_axis_is_in_the_sample_and_the_seed_fixes_it() -> None:
    examples = load_examples(DatasetConfig(source=DataSource.bundled))
    every = set().union(*(strata(e) for e in examples))
    assert {t for t in every if t.startswith("axis:")} and {t for t in every if "cluster" in t}
    for seed in range(5):
        chosen = stratified_sample(examples, 20, seed)
        assert len(chosen) == len(set(chosen)) == 20 and chosen == sorted(chosen)
        assert set().union(*(strata(examples[i]) for i in chosen)) == every
        assert stratified_sample(examples, 20, seed) == chosen
    assert len({tuple(stratified_sample(examples, 20, s)) for s in range(5)}) > 1
    assert stratified_sample(examples, 100, 0) == list(range(len(examples)))


def test_a_sample_too_small_to_cover_every_stratum_is_refused() -> None:
    examples = load_examples(DatasetConfig(source=DataSource.bundled))
    with pytest.raises(ConfigError, match=r"examples=3: covering every consensus cluster"):
        stratified_sample(examples, 3, 0)

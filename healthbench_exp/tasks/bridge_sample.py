"""The bridge kit's sample: a seeded, stratified choice of examples to grade with both judges.

`stratified_sample(examples, n, seed)`: the examples shuffled once with `seed`; first, for each
`cluster:` and `axis:` tag of the set's criteria (sorted), the first example in that order that
has it, unless an example already chosen has it (so every consensus cluster and every axis is
represented); then the rest of the shuffled order, up to `n`. Positions come back in the data's
order. ConfigError where covering every tag alone needs more than `n` examples.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from healthbench_exp.config.schema import ConfigError
from healthbench_exp.core.types import Example

STRATA = ("cluster:", "axis:")


def _tags(example: Example) -> set[str]:
    return {t for c in example.rubrics for t in c.tags if t.startswith(STRATA)}


def stratified_sample(examples: Sequence[Example], n: int, seed: int) -> list[int]:
    """Positions in `examples` of the sample (see the module docstring)."""
    if n >= len(examples):
        return list(range(len(examples)))
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    tags = [_tags(e) for e in examples]
    chosen: list[int] = []
    covered: set[str] = set()
    for tag in sorted(set().union(*tags)):
        if tag in covered:
            continue
        first = next(i for i in order if tag in tags[i])
        chosen.append(first)
        covered |= tags[first]
    if len(chosen) > n:
        raise ConfigError(
            f"examples={n}: covering every consensus cluster and axis takes {len(chosen)} "
            "examples; ask for at least that many"
        )
    taken = set(chosen)
    chosen += [i for i in order if i not in taken][: n - len(chosen)]
    return sorted(chosen)

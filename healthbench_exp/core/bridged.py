"""`bridged` of summary.json: a run graded by a new judge, rescored on the reference grader's
scale through a bridge (verdicts of both judges on the same replies; `grading.bridge`).

Beside the run's own metrics, which stay the new judge's, never instead of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from healthbench_exp.core.record import OMIT_NONE, Record

POSITIVE = "positive"
NEGATIVE = "negative"
MET = "met"
NOT_MET = "not"
LABEL_SHIFT = "label_shift"  # `bridge.method`: the judge's error rates carried over (default)
CALIBRATION = "calibration"  # `bridge.method`: q = P(O met | N's verdict) carried over
METHODS = (LABEL_SHIFT, CALIBRATION)
# why a label-shift stratum takes its sign's pooled values (`BridgeStratum.pooled`)
FEW_O_MET = "few_o_met"  # revision 3: too few bridge pairs with O met: its sign's pooled se
FEW_O_NOT = "few_o_not"  # revision 3: too few bridge pairs with O not met: its sign's pooled sp
NEAR_CHANCE = "near_chance"  # J = se + sp - 1 of the rates chosen below the bound: both pooled
FEW_RUN = "run"  # too few graded criteria in the run: its sign's pooled m, se and sp
FEW_PAIRS = "bridge"  # revisions 1 and 2 only: too few pairs with O met or not met: both pooled
# which of a label-shift stratum's error rates are its sign's (`BridgeStratum.pooled_rates`)
SE = "se"
SP = "sp"
BOTH = "both"
# what each method's weights mean, for a reader ({old}: the reference grader, {new}: the judge)
DESCRIBES = {
    CALIBRATION: "each counted as met with the probability that {old} said met on criteria of "
    "its stratum where {new} gave that verdict (q, carried over from the bridge: right only for "
    "replies like the bridge's)",
    LABEL_SHIFT: "each counted as met with the probability that {old} said met, by Bayes "
    "from {new}'s error rates against {old} in its stratum (from the bridge) and the share "
    "{old} would have said met in this run (from {new}'s own met share weighted as the score "
    "weights criteria, Rogan-Gladen)",
}
# what the bridged score's interval covers (SPEC 7.5 revision 2)
INTERVAL_COVERS = (
    "the reference grader's score for this run's model on this set, example sampling included "
    "(as the headline's interval is for the run's judge)"
)


@dataclass
class BridgeStratum(Record):
    """One stratum and sign of the bridge, as its method uses it.

    `calibration`: `n_met` / `n_not`, bridge pairs of the stratum and sign where the new judge
    said met / not met; `q_met` / `q_not`, the probability, used for the run, that the reference
    grader said met there (Jeffreys' (k + 0.5) / (n + 1)); `pooled`: the cells (`met`, `not`)
    with fewer than the minimum pairs, whose q is their sign's pooled cell's.

    `label_shift`: `n_o_met` / `n_o_not`, bridge pairs where the reference grader said met /
    not met; `se` / `sp`, the new judge's sensitivity and specificity against it, as used (the
    sign's pooled values where pooled); `run_n` / `run_met`, the run's graded criteria there and
    those the new judge said met; `pi`, the reference grader's met share on the run
    (Rogan-Gladen); `w_met` / `w_not`, the weight of a criterion the new judge said met / not
    met; `pooled`: why it takes its sign's pooled values (revision 3: `few_o_met`, n1 < 30,
    its se; `few_o_not`, n0 < 30, its sp; `near_chance`, J of the rates so chosen below 0.1,
    both; `run`, too few graded criteria in the run, both and the met share; revisions 1 and 2:
    `bridge`, either count short, both); `pooled_rates`: which rates that pools, `se`, `sp` or
    `both` (revision 3; `rates_pooled` reads it from `pooled` in an older record).

    The other method's fields are None (not written)."""

    stratum: str  # `cluster:<c>`, `axis:<a>`, `none`; `pooled` for a sign's pooled values
    sign: str  # positive | negative (the sign of the criterion's points)
    n_met: int | None = field(default=None, metadata=OMIT_NONE)
    n_not: int | None = field(default=None, metadata=OMIT_NONE)
    q_met: float | None = field(default=None, metadata=OMIT_NONE)
    q_not: float | None = field(default=None, metadata=OMIT_NONE)
    pooled: list[str] = field(default_factory=list)
    n_o_met: int | None = field(default=None, metadata=OMIT_NONE)
    n_o_not: int | None = field(default=None, metadata=OMIT_NONE)
    se: float | None = field(default=None, metadata=OMIT_NONE)
    sp: float | None = field(default=None, metadata=OMIT_NONE)
    run_n: int | None = field(default=None, metadata=OMIT_NONE)
    run_met: int | None = field(default=None, metadata=OMIT_NONE)
    pi: float | None = field(default=None, metadata=OMIT_NONE)
    w_met: float | None = field(default=None, metadata=OMIT_NONE)
    w_not: float | None = field(default=None, metadata=OMIT_NONE)
    pooled_rates: str | None = field(default=None, metadata=OMIT_NONE)

    @property
    def rates_pooled(self) -> str | None:
        """Which error rates are its sign's pooled ones (`se`, `sp`, `both`; None: neither):
        `pooled_rates` where written (revision 3), else, in a revision 1 or 2 record, `both`
        wherever `pooled` names a reason (those revisions pooled both rates together)."""
        if self.pooled_rates is not None or self.se is None:
            return self.pooled_rates
        return BOTH if self.pooled else None


@dataclass
class RareVerdict(Record):
    """A stratum and sign where one of the reference grader's verdicts is rare in the bridge
    (fewer than the minimum pairs: `label_shift` takes its sign's pooled rate for it) while a
    run gives that verdict far more often (`grading.bridge.rare`): the bridged figure rests
    on the pooled rate there, and the stratum needs more bridge replies of that kind."""

    stratum: str
    sign: str  # positive | negative
    verdict: str  # met | not: the reference grader's verdict rare in the bridge
    bridge_n: int  # bridge pairs with that verdict
    bridge_share: float  # their share of the stratum's bridge pairs
    run_share: float  # the run's share of that verdict (its pi; the kit: a source's own)
    source: str | None = field(default=None, metadata=OMIT_NONE)  # the kit: the model left out


@dataclass
class HoldoutError(Record):
    """The bridge checked on itself: k-fold by example, each held-out bridge example's bridged
    score (from the other folds' q) minus the reference grader's own score on it."""

    mean: float | None  # mean over the bridge's examples; None: no example scored
    ci: list[float] | None  # 95% bootstrap interval of the mean (examples resampled)
    folds: int
    examples: int = 0  # bridge examples scored (with graded positive points)


@dataclass
class SourceCell(Record):
    """One bridge source's pairs in one cell: n pairs, k with the reference grader's met."""

    n: int
    k: int
    q: float | None  # Jeffreys' (k + 0.5) / (n + 1), unpooled; None: n is 0


@dataclass
class SpreadCell(Record):
    """How much one cell's rate varies between bridge sources (replies of different models):
    `calibration`, q (the reference grader's met share where the new judge gave `verdict`);
    `label_shift`, the new judge's agreement where the reference grader gave `verdict` (se
    where met, sp where not): the quantity the method assumes the same for every model.

    `spread`: the largest minus the smallest source rate (sources with pairs there); `chi2`,
    `df`, `p_value`: Pearson's chi-square test that every source has the same rate; `ci`: the
    bridge's 95% bootstrap interval of the cell's rate; `beyond_interval`: a source's rate lies
    outside it and the test rejects equality at 0.05."""

    stratum: str
    sign: str
    verdict: str  # met | not: the new judge's (calibration) or the reference grader's verdict
    q: float  # the rate, all sources together, unpooled
    ci: list[float]
    by_source: dict[str, SourceCell]
    spread: float
    chi2: float
    df: int
    p_value: float
    beyond_interval: bool


@dataclass
class LeaveOneOut(Record):
    """Leave one model out: the bridge from the other sources, through `method`, applied to
    this source's new-judge verdicts, against the reference grader's own score on them."""

    source: str  # the source's run directory, as given
    model: str  # the model whose replies it holds
    method: str
    own: float | None  # the reference grader's own score on the source's replies
    bridged: float | None  # None: no example scored, or the method refused the others' bridge
    error: float | None  # bridged - own
    ci: list[float] | None  # the bridged score's 95% interval
    refused: str | None = field(default=None, metadata=OMIT_NONE)


@dataclass
class Bridged(Record):
    """`bridged` of an eval run with `bridge.runs` (see the module docstring)."""

    method: str  # label_shift | calibration (`bridge.method`)
    bridge: list[str]  # the bridge sources' run directories, as given
    old_judge: str  # the reference grader
    new_judge: str  # this run's judge
    pairs: int  # criteria both judges graded, over every source
    strata: list[BridgeStratum]
    metrics: dict[str, float | None]  # `bridged_score`, `bridged:<tag>`
    ci: dict[str, list[float] | None]  # 95% interval of each metric; None: undefined
    holdout_error: HoldoutError
    # several sources: how much q varies between them (cells where two or more have pairs)
    spread: list[SpreadCell] | None = field(default=None, metadata=OMIT_NONE)
    # several sources: each left out, through each method (leave one model out)
    transport: list[LeaveOneOut] | None = field(default=None, metadata=OMIT_NONE)
    warnings: list[str] = field(default_factory=list)  # what a reader must know (one line each)
    # the method's revision that produced the score (SPEC 7.5): `label_shift` 3 since
    # 2026-12-02 (se and sp each pooled on its own count), 2 from 2026-11-29 (weighted m, J_s
    # down to 0.1, the bridge resampled by example); a record written before 2 has none and
    # reads as 1
    revision: int = 1

    @property
    def reports_error_rates(self) -> bool:
        """Whether its strata give the judge's error rates (se, sp: `label_shift`) rather than
        q carried over (`calibration`)."""
        return any(s.se is not None for s in self.strata)

    @property
    def describes(self) -> str:
        """What its weights mean, `{old}` and `{new}` to fill ("" for a method not known)."""
        return DESCRIBES.get(self.method, "")


@dataclass
class BridgeCheck(Record):
    """A bridge of several sources checked before any run uses it (the bridge kit's
    `bridge_check.json`): each source left out through each method (`transport`), and per
    method how what it holds fixed varies between the sources (`spread`), or its refusal."""

    bridge: list[str]  # the sources' run directories
    models: list[str]  # the model whose replies each holds
    old_judge: str
    new_judge: str
    pairs: int
    transport: list[LeaveOneOut]
    spread: dict[str, list[SpreadCell]]  # method -> cells
    refused: dict[str, str] = field(default_factory=dict)  # method -> its one-line refusal
    # each source left out as the run: strata whose rare verdict it gives far more often than
    # the other sources' replies did (`grading.bridge.rare`)
    rare_verdicts: list[RareVerdict] = field(default_factory=list)

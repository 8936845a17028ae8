"""The `protocol` and `headline` parts of `summary.json` (see `core.summary`).

`protocol` says which reference protocol a run is measured against (`name`: the set's reference
bundle, e.g. `healthbench-professional`), whether the run followed it (`reference`), and each
setting where it did not (`deviations`, one `"<option>: <reference value> -> <this run's>"` per
setting). `config.protocol.protocol_check` computes them; `reference` is true exactly when
`deviations` is empty. Summaries written before `name` and `deviations` existed lack them (they
read as None and are not written back).

`headline` names the metric a run is to be quoted by: `length_adjusted_score` for HealthBench
Professional with its reference length adjustment, `overall_score` otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from healthbench_exp.core.record import OMIT_NONE, Record

OVERALL_SCORE = "overall_score"  # the plain clipped mean (the reference's name; `score` too)
LENGTH_ADJUSTED_SCORE = "length_adjusted_score"  # the length-adjusted clipped mean


@dataclass
class Protocol(Record):
    """How the run graded, and whether that is the reference protocol (simple-evals)."""

    reference: bool
    grading: str  # what was done, naming every departure from the reference
    grader_template_sha256: str
    prompt_order: str  # reference | shared_prefix_first
    judge_transport: str  # chat.completions | responses | batch
    harness_version: str
    # the reference bundle the run is measured against: healthbench | healthbench-hard |
    # healthbench-consensus | healthbench-professional | healthbench-meta-eval
    name: str | None = field(default=None, metadata=OMIT_NONE)
    # "<option>: <reference value> -> <this run's value>", one per setting that differs
    deviations: list[str] | None = field(default=None, metadata=OMIT_NONE)
    # a dataset.path run's file: {"name": its file name, "sha256": its digest}
    data_file: dict[str, str | None] | None = field(default=None, metadata=OMIT_NONE)
    # a jury run (SPEC 7.1): every judge's model name, the primary judge (whose verdicts make
    # the metrics) first; the further judges' verdicts are figures beside them
    jury: list[str] | None = field(default=None, metadata=OMIT_NONE)
    # how each endpoint was sent its calls, by role (`model` when it sampled, `judge`): its
    # `api` (chat | responses), `system_message` (null: none) and `service_tier` (null: not sent)
    endpoints: dict[str, dict[str, str | None]] | None = field(default=None, metadata=OMIT_NONE)
    # a regrade (`regrade=<run dir>`): the source run whose replies were graded again
    regrade_of: str | None = field(default=None, metadata=OMIT_NONE)

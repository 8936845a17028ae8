"""The bridge study's worlds (`World`, `SCENARIOS`, `RARE_VERDICT`): what each one varies is
described in `bench/bridge_simulation.py`, which draws and bridges them."""

from __future__ import annotations

from dataclasses import dataclass

NEGATIVE_SLOTS = 3  # negative criteria per example, over two strata (by default)


@dataclass(frozen=True)
class World:
    """One scenario of the study (see the module docstring)."""

    name: str
    j: float = 0.6  # the new judge's mean J = se + sp - 1
    bridge_examples: int = 500
    run_examples: int = 1000
    shift: float = 0.0  # the run's model: this much more of each positive criterion met
    spread: float = 0.0  # prevalence offset between criteria of a stratum (random per slot)
    points_spread: float = 0.0  # prevalence offset that grows with the criterion's points
    sparse: bool = False  # many rare cluster strata (pooled on both sides)
    rates_change: float = 0.0  # the judge's se on the run's model minus on the bridge's
    strata_se: tuple[float, ...] = ()  # se per stratum (cycled) instead of J's mean
    negative_sp: tuple[float, ...] = (0.0, 0.0)  # sp of the negative strata (0: J's mean)
    negative_se: tuple[float, ...] = ()  # se of the negative strata (0 or none: as the others)
    negative_strata: int = 2
    negative_slots: int = NEGATIVE_SLOTS  # negative criteria per example (cycling the strata)
    negative_shift: float | None = None  # the run's negative criteria moved (None: -shift / 2)
    rare_bridge_share: float = 0.0  # the bridge's prevalence on the first negative stratum
    rare_run_share: float = 0.0  # the run's prevalence on the first negative stratum (0: moved)
    reply_correlation: float = 0.0  # share of verdicts that follow the reply's leniency
    prevalence: tuple[float, float] = (0.3, 0.6)  # range of a positive stratum's base share
    negative_prevalence: tuple[float, float] = (0.1, 0.25)  # of a negative one's


SCENARIOS = (
    World("same model"),
    World("+0.15 met", shift=0.15),
    World("-0.15 met", shift=-0.15),
    World("prevalence varies within strata, +0.15", shift=0.15, spread=0.2),
    World("sparse strata, +0.15", shift=0.15, sparse=True),
    World("J 0.4, +0.15", j=0.4, shift=0.15),
    World("J 0.4, -0.15", j=0.4, shift=-0.15),
    World("J 0.9, +0.15", j=0.9, shift=0.15),
    World("J 0.9, -0.15", j=0.9, shift=-0.15),
    World("bridge 250, +0.15", bridge_examples=250, shift=0.15),
    World("bridge 250, J 0.4, -0.15", bridge_examples=250, j=0.4, shift=-0.15),
    World("bridge 1000, +0.15", bridge_examples=1000, shift=0.15),
    # revision 2: m weighted as the score weights criteria follows prevalence that moves with
    # points
    World("prevalence rises with points by 0.1, +0.15", shift=0.15, points_spread=0.1),
    World("prevalence rises with points by 0.2, +0.15", shift=0.15, points_spread=0.2),
    World("se 0.95 and 0.6 between strata, -0.15", shift=-0.15, strata_se=(0.95, 0.6)),
    World("J 0.25, +0.15", j=0.25, shift=0.15),
    World(
        "bridge 150, errors correlated within a reply",
        bridge_examples=150,
        shift=0.15,
        reply_correlation=0.8,
    ),
    World("bridge 500, errors correlated within a reply", shift=0.15, reply_correlation=0.8),
    World("run 100, +0.15", run_examples=100, shift=0.15),
    World("run 250, +0.15", run_examples=250, shift=0.15),
    World("true score near 0.05", prevalence=(0.05, 0.09), negative_prevalence=(0.01, 0.03)),
    World("true score near 0.95", prevalence=(0.93, 0.97), negative_prevalence=(0.01, 0.03)),
    # negative criteria rarely met, as in the real data (their strata near pi 0)
    World("negative criteria met 0.01-0.03", negative_prevalence=(0.01, 0.03)),
    World("negative criteria met 0.01-0.03, +0.15", shift=0.15, negative_prevalence=(0.01, 0.03)),
    World(
        "negative criteria met 0.01-0.03, their sp 0.84 and 0.72, +0.15",
        shift=0.15,
        negative_prevalence=(0.01, 0.03),
        negative_sp=(0.84, 0.72),
    ),
    World("se 0.1 lower on the run's model (assumption broken)", shift=0.15, rates_change=-0.1),
    *(
        World(f"{name}, {shift:+.2f}", shift=shift, **options)
        for name, options in (
            (
                "rare: negatives met 0.01-0.03, one stratum",
                {"negative_prevalence": (0.01, 0.03), "negative_strata": 1, "negative_sp": (0.84,)},
            ),
            (
                "rare: negatives met 0.01-0.03, two strata",
                {"negative_prevalence": (0.01, 0.03), "negative_sp": (0.84, 0.72)},
            ),
            (
                "rare: negatives met 0.01-0.03, three strata",
                {
                    "negative_prevalence": (0.01, 0.03),
                    "negative_strata": 3,
                    "negative_sp": (0.84, 0.72, 0.9),
                },
            ),
            (
                "rare: negatives met 0.01-0.03, a third of the criteria",
                {
                    "negative_prevalence": (0.01, 0.03),
                    "negative_slots": 4,
                    "negative_sp": (0.84, 0.72),
                },
            ),
            (
                "rare: negatives met 0.03, n1 near 30",
                {
                    "negative_prevalence": (0.028, 0.032),
                    "negative_slots": 4,
                    "negative_sp": (0.84, 0.72),
                },
            ),
            (
                "rare: positives met 0.97-0.98 (mirror)",
                {"prevalence": (0.97, 0.98), "strata_se": (0.7, 0.92, 0.8, 0.86, 0.75, 0.9)},
            ),
            (
                "rare: mirror and rare negatives together",
                {
                    "prevalence": (0.97, 0.98),
                    "strata_se": (0.7, 0.92, 0.8, 0.86, 0.75, 0.9),
                    "negative_prevalence": (0.01, 0.03),
                    "negative_sp": (0.84, 0.72),
                },
            ),
            (
                "rare: edge, a rare stratum's se 0.60 against 0.93, the run meets it 0.17",
                {
                    "negative_strata": 3,
                    "negative_se": (0.6, 0.93, 0.93),
                    "rare_bridge_share": 0.025,
                    "rare_run_share": 0.17,
                },
            ),
        )
        for shift in (0.15, -0.15)
    ),
)
RARE_VERDICT = tuple(w for w in SCENARIOS if w.name.startswith("rare: "))


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(
        description="Print the bridge study's worlds, one name a line (bridge_study.py runs them)."
    ).parse_args()
    for world in SCENARIOS:
        print(world.name)

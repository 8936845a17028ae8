"""`UnparseableWatch` step by step: the calls it lets out, the replies it counts, when it stops
the run and what it says; plus the template digests and the metric-name helpers (hand values)."""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from healthbench_exp.grading.grader import (
    GRADER_TEMPLATE_SHA256,
    grader_template,
    shared_prefix_first_template,
    template_sha256,
)
from healthbench_exp.grading.length import LengthPenalty
from healthbench_exp.grading.scoring import slice_names, tag_metric_names
from healthbench_exp.grading.verdict_watch import SNIPPET_CHARS, UnparseableJudge, UnparseableWatch


def test_a_new_watch_is_armed_only_with_a_limit() -> None:
    watch = UnparseableWatch(3)
    assert (watch.limit, watch.gate, watch.armed, watch.tripped) == (3, True, True, False)
    assert (watch.unparseable, watch.admitted, watch.example) == (0, 0, "")
    off = UnparseableWatch(0, gate=False)
    assert (off.armed, off.gate) == (False, False)
    off.record("garbage", parsed=False)  # never counts, never raises
    assert off.unparseable == 0


def test_the_limit_th_unparseable_reply_stops_the_run_quoting_one() -> None:
    watch = UnparseableWatch(4)
    watch.record("", parsed=False)  # empty: counted, not quoted
    watch.record(None, parsed=False)  # the request failed: its place is given back
    long_reply = "x" * 500
    watch.record(long_reply, parsed=False)
    watch.record("second", parsed=False)  # not quoted: one example is enough
    assert (watch.unparseable, watch.admitted, watch.tripped) == (3, -1, False)
    with pytest.raises(UnparseableJudge) as stopped:
        watch.record("third", parsed=False)
    assert watch.tripped and watch.unparseable == 4
    snippet = repr("x" * SNIPPET_CHARS)
    assert str(stopped.value) == (
        f"stopped early: the judge's first 4 replies were all unparseable (one of them: "
        f"{snippet}); a verdict must be a JSON object with a boolean 'criteria_met', bare or "
        "fenced as ```json. Check judge.name and judge.base_url, or set "
        "judge.early_stop_unparseable=0 to grade anyway"
    )
    empty = UnparseableWatch(1)
    with pytest.raises(UnparseableJudge, match=r"first 1 replies .* \(all were empty\);"):
        empty.record("", parsed=False)


def test_a_parsed_verdict_disarms_the_watch_for_good() -> None:
    watch = UnparseableWatch(2)
    watch.record("bad", parsed=False)
    watch.record('{"criteria_met": true}', parsed=True)
    assert not watch.armed and not watch.tripped
    for _ in range(5):
        watch.record("bad", parsed=False)  # no longer counted
    assert watch.unparseable == 1


def test_admit_holds_calls_past_the_limit_until_a_reply_makes_room() -> None:
    async def go() -> list[str]:
        events: list[str] = []
        watch = UnparseableWatch(2)
        await watch.admit()
        await watch.admit()
        assert watch.admitted == 2

        async def third() -> None:
            await watch.admit()
            events.append("third admitted")

        waiting = asyncio.create_task(third())
        await asyncio.sleep(0.01)
        events.append(f"held: {not waiting.done()}")
        watch.record(None, parsed=False)  # a failed request gives its place back
        await asyncio.wait_for(waiting, 1)
        events.append(f"admitted {watch.admitted}")
        # a parsed verdict releases everyone and admits without counting
        late = asyncio.create_task(watch.admit())
        await asyncio.sleep(0.01)
        events.append(f"late held: {not late.done()}")
        watch.record("{}", parsed=True)
        await asyncio.wait_for(late, 1)
        await watch.admit()
        events.append(f"disarmed {watch.admitted}")
        return events

    assert asyncio.run(go()) == [
        "held: True",
        "third admitted",
        "admitted 2",
        "late held: True",
        "disarmed 2",
    ]


def test_a_tripped_watch_refuses_the_held_and_the_next_calls() -> None:
    async def go() -> tuple[str, str]:
        watch = UnparseableWatch(1)
        await watch.admit()
        held = asyncio.create_task(watch.admit())
        await asyncio.sleep(0.01)
        assert not held.done()
        with pytest.raises(UnparseableJudge):
            watch.record("nope", parsed=False)
        with pytest.raises(UnparseableJudge) as first:
            await asyncio.wait_for(held, 1)
        with pytest.raises(UnparseableJudge) as second:
            await watch.admit()
        return str(first.value), str(second.value)

    first, second = asyncio.run(go())
    assert first == second and "one of them: 'nope'" in first


def test_without_the_gate_every_call_is_admitted() -> None:
    async def go() -> int:
        watch = UnparseableWatch(1, gate=False)
        for _ in range(4):
            await asyncio.wait_for(watch.admit(), 1)
        return watch.admitted

    assert asyncio.run(go()) == 4


def test_template_digests() -> None:
    official = hashlib.sha256(grader_template().encode("utf-8")).hexdigest()
    assert template_sha256() == template_sha256("reference") == official == GRADER_TEMPLATE_SHA256
    moved = hashlib.sha256(shared_prefix_first_template().encode("utf-8")).hexdigest()
    assert template_sha256("shared_prefix_first") == moved != official


def test_metric_name_helpers() -> None:
    metrics = {
        "theme:a": 1,
        "theme:a:n_samples": 2,
        "axis:x": 3,
        "theme:b": 4,
        "length_adjusted_score:theme:c": 5,
        "length_adjusted_score:theme:c:n_samples": 6,
        "xtheme:d": 7,
    }
    assert tag_metric_names(metrics, "theme:") == ["theme:a", "theme:b"]
    assert slice_names(metrics, "theme:") == ["theme:a", "theme:b"]
    assert slice_names(metrics, "length_adjusted_score:theme:") == ["length_adjusted_score:theme:c"]
    assert tag_metric_names(metrics, "length_adjusted_score:") == []


def test_a_length_penalty_as_written_to_the_summary() -> None:
    penalty = LengthPenalty(0.0299, 2000, "all", "published")
    assert penalty.to_dict() == {
        "per_500_chars": 0.0299,
        "center_chars": 2000,
        "set": "all",
        "source": "published",
    }

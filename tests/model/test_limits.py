"""`LoopTurns`: requests start a few per turn of the event loop, first come first served, so
the loop reads and writes its sockets between batches of a burst instead of after all of it."""

from __future__ import annotations

import asyncio
import socket

from healthbench_exp.model.pacer import LoopTurns

PER_TURN = 4
REQUESTS = 42  # not a multiple of PER_TURN: the last turn starts the rest


async def start_all(turns: LoopTurns, cancelled: frozenset[int] = frozenset()) -> list[object]:
    """Start REQUESTS waiters at once (as the judge calls of many examples do) while two
    sockets bounce a byte back and forth, one hop per turn of the loop; return what happened,
    in order: the index of each request as it started, "io" for each hop read."""
    events: list[object] = []
    loop = asyncio.get_running_loop()
    left, right = socket.socketpair()
    left.setblocking(False)
    right.setblocking(False)

    def bounce(reader: socket.socket, writer: socket.socket) -> None:
        reader.recv(1)
        events.append("io")
        writer.send(b".")

    loop.add_reader(left, bounce, left, right)
    loop.add_reader(right, bounce, right, left)

    async def request(index: int) -> None:
        await turns.wait()
        events.append(index)

    tasks = [asyncio.create_task(request(index)) for index in range(REQUESTS)]
    right.send(b".")  # the first hop: readable at the loop's next poll
    await asyncio.sleep(0)  # every task now waits in `wait`, or has started
    for index in cancelled:
        tasks[index].cancel()
    # (bounded: a turn that never lets the waiters go fails here instead of hanging)
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 10)
    loop.remove_reader(left)
    loop.remove_reader(right)
    left.close()
    right.close()
    return events


def runs_between_hops(events: list[object]) -> list[int]:
    """How many requests started between one socket hop and the next, where any did."""
    runs, count = [], 0
    for event in events:
        if event == "io":
            runs.append(count)
            count = 0
        else:
            count += 1
    return [run for run in [*runs, count] if run]


def assert_full_turns(runs: list[int], requests: int) -> None:
    """Every turn but the last started PER_TURN requests, the last the rest."""
    full, rest = divmod(requests, PER_TURN)
    assert runs == [PER_TURN] * full + ([rest] if rest else [])


def test_a_burst_starts_a_few_requests_per_turn_with_the_sockets_polled_between() -> None:
    events = asyncio.run(start_all(LoopTurns(PER_TURN)))
    started = [event for event in events if event != "io"]
    assert started == list(range(REQUESTS))  # first come, first served
    assert_full_turns(runs_between_hops(events), REQUESTS)


def test_a_request_cancelled_while_it_waits_leaves_its_place_to_the_next() -> None:
    cancelled = frozenset({5, 6, 7, 20})
    turns = LoopTurns(PER_TURN)
    events = asyncio.run(start_all(turns, cancelled))
    started = [event for event in events if event != "io"]
    assert started == [index for index in range(REQUESTS) if index not in cancelled]
    assert_full_turns(runs_between_hops(events), REQUESTS - len(cancelled))
    assert not turns.waiters


def test_requests_one_at_a_time_never_wait() -> None:
    async def one_by_one() -> list[bool]:
        turns = LoopTurns(PER_TURN)
        waited = []
        for _ in range(3 * PER_TURN):
            task = asyncio.create_task(turns.wait())
            await asyncio.sleep(0)  # one turn: a request that did not have to wait is done
            waited.append(not task.done())
            await asyncio.wait_for(task, 10)
            await asyncio.sleep(0.001)  # a later turn (past the loop's next poll)
        return waited

    assert asyncio.run(one_by_one()) == [False] * (3 * PER_TURN)

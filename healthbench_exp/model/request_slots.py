"""What a request holds while it is sent, each as a context manager that gives it back however
the request ends (answered, failed, cancelled): its places (`concurrency_slots`: the
endpoint's adaptive limit, then the run's cap on requests in flight), its share of the budget
(`reserved_spend`), its count in flight (`counted_in_flight`) and its line in the spend
journal (`journal_entry`). The endpoint (`model/endpoint.py`) nests them in this order."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

from healthbench_exp.core.endpoint_errors import BudgetExhausted
from healthbench_exp.model.costs import Budget
from healthbench_exp.model.endpoint_stats import EndpointStats
from healthbench_exp.model.health import Halt
from healthbench_exp.model.pacer import AdaptiveLimit
from healthbench_exp.model.spend_journal import SpendJournal


@dataclass
class Outcome:
    """Whether the request brought a usable answer: set by the holder before it leaves; the
    adaptive limit grows on success and shrinks otherwise."""

    success: bool = False


@asynccontextmanager
async def concurrency_slots(
    limit: AdaptiveLimit, shared: asyncio.Semaphore | None
) -> AsyncIterator[Outcome]:
    """A place under the endpoint's adaptive `limit`, then one under the run's `shared` cap
    (`runner.max_in_flight`; None: no cap), both released on leaving (the shared one first),
    the limit told whether the request succeeded (`Outcome.success`)."""
    outcome = Outcome()
    await limit.acquire()
    try:
        if shared is None:
            yield outcome
            return
        await shared.acquire()
        try:
            yield outcome
        finally:
            shared.release()
    finally:
        limit.release(outcome.success)


@dataclass
class Spend:
    """What the request cost in USD: set by the holder once the reply's usage is read (0 for a
    request that was not answered, or answered without usage)."""

    cost_usd: float = 0.0


@contextmanager
def reserved_spend(budget: Budget | None, estimate_usd: float, halt: Halt) -> Iterator[Spend]:
    """`estimate_usd` reserved from `budget` (None: no budget) and settled on leaving at the
    cost the holder sets. A budget that refuses the reservation stops the run (`halt`: no
    other request is sent either) and raises BudgetExhausted."""
    spend = Spend()
    if budget is None:
        yield spend
        return
    try:
        budget.reserve(estimate_usd)
    except BudgetExhausted as exc:
        halt.stop(str(exc))
        raise
    try:
        yield spend
    finally:
        budget.settle(estimate_usd, spend.cost_usd)


@contextmanager
def counted_in_flight(stats: EndpointStats) -> Iterator[bool]:
    """The request counted in `stats.in_flight` (and its peak) until it leaves; yields whether it
    is the only one in flight (the endpoint has been busy since now)."""
    first = stats.in_flight == 0
    stats.in_flight += 1
    stats.peak_in_flight = max(stats.peak_in_flight, stats.in_flight)
    try:
        yield first
    finally:
        stats.in_flight -= 1


@dataclass
class JournalLine:
    """What the answered request's line in the spend journal ends with: the reply's usage and
    service tier (None: answered without a usable reply)."""

    usage: Mapping[str, object] | None = None
    service_tier: str | None = None


@contextmanager
def journal_entry(journal: SpendJournal | None, role: str, chars: int) -> Iterator[JournalLine]:
    """The request written to `journal` as sent (None: no journal) and as ended when it leaves,
    paid or not. A cancelled request (sent, never answered: maybe paid) is left open, as a kill
    leaves it."""
    line = JournalLine()
    if journal is None:
        yield line
        return
    number = journal.sent(role, chars)
    try:
        yield line
    except asyncio.CancelledError:
        raise
    except BaseException:
        journal.ended(number, None, None)
        raise
    journal.ended(number, line.usage, line.service_tier)

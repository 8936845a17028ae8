"""A request's ticket in the pacer's copy of the server's buckets (`buckets.py`): what it
took, where it stands, and the only moves it may make.

    take ──► TAKEN ──sending──► SENT ──learn(admitted)──► ANSWERED
               │                  ├──learn(not admitted, a 429)──► REFUSED
               │                  └──ended (no reply learnt from)──► UNANSWERED
               └──ended (never sent: budget, cancelled)──► RETURNED

Each move names the states it may leave and raises `TicketError` from any other (a request
sent twice, learnt from after its cost went back, ended twice), so the order of the calls in
`model/endpoint.py` is checked, not only described. `HeaderBuckets` makes the moves; a ticket
only records them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

KINDS = ("requests", "tokens")


class TicketError(RuntimeError):
    """A move the ticket's state does not allow (a bug in the caller, never a server's doing)."""


class TicketState(enum.Enum):
    TAKEN = "taken"  # its cost taken from the copy, pending: not sent yet
    SENT = "sent"  # on its way or at the server: in flight
    ANSWERED = "answered"  # a reply came and was learnt from
    REFUSED = "refused"  # a 429 came and was learnt from (it is taken again by a new ticket)
    UNANSWERED = "unanswered"  # sent, ended without a reply learnt from (an error, a timeout)
    RETURNED = "returned"  # never sent: its cost went back to the copy


@dataclass
class Ticket:
    """One request's place in the copy: `cost` (its tokens, as the server counts them; and one
    request), when it started (`started_at`, the pacer's clock), the levels of the copy it
    leaves (`mark`: taken at the start, taken again when sent, as the level the server will see;
    see `HeaderBuckets`), and once sent its place in the sending order (`seq`) and when
    (`sent_at`)."""

    cost: float
    started_at: float
    mark: dict[str, float]
    state: TicketState = TicketState.TAKEN
    seq: int = -1
    sent_at: float = field(default=float("nan"))

    @property
    def sent(self) -> bool:
        """Whether it was ever sent (it has a place in the sending order)."""
        return self.seq >= 0

    def move(self, leaving: tuple[TicketState, ...], entering: TicketState) -> None:
        """Leave one of the states `leaving` for `entering`; TicketError from any other."""
        if self.state not in leaving:
            names = " or ".join(state.value for state in leaving)
            article = "an" if self.state.value[0] in "aeiou" else "a"
            raise TicketError(
                f"{article} {self.state.value} ticket cannot become {entering.value} "
                f"(only {names} can)"
            )
        self.state = entering

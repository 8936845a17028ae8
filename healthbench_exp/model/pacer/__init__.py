"""The pacer (docs/rate-limits.md, docs/reliability.md): when each request to an endpoint may
start, so a run keeps to the server's rate limits, learns them from its replies and its 429s,
and a rate-limit 429 only slows it down.

Where each part lives, bottom up (each imports only those above it in this list):

- `server_waits`: how long a server says to wait: its Retry-After (`retry_after_s`, read the
  same for the HTTP retries and the 429s) and OpenAI's durations (`parse_duration`).
- `tickets`: one request's ticket in the copy of the server's buckets (`Ticket`): its states
  and the only moves each allows (`TicketError` otherwise).
- `limits`: the endpoint's in-flight limit, halved by 429s and grown back (AIMD:
  `AdaptiveLimit`), and the requests started per turn of the event loop (`LoopTurns`).
- `refusals`: what a 429 means (`classify_429` -> `Refusal`: a quota error, a request too
  large, or a wait, brief or not) and the exception that sends its request again
  (`RateLimited`).
- `buckets`: the endpoint's copy of the server's buckets, learnt from the `x-ratelimit-*`
  headers of its replies (`HeaderBuckets`), whose tickets it moves.
- `pace`: the one pace for every request to an endpoint (`EndpointPacer`: its pauses, cuts
  and climb back, on the buckets), a request whose turn lapsed at a cut (`TurnLapsed`), and
  one copy of the buckets for the roles of one account (`share_buckets`).

Around it, outside this package: the run's clock it reads and sleeps on (`model.clock`), the
endpoint that starts each request through it and holds its slots (`model.endpoint`,
`model.request_slots`), the roles that share one account's buckets (`model.roles`), the HTTP
retries that read the same Retry-After (`model.http`), the batch judge that reads a 429
refusing a batch (`model.batch`). The package imports only `model.clock`, itself and the
standard library; code outside it imports this face, and only those five modules do
(tests/test_architecture.py).
"""

from healthbench_exp.model.pacer.buckets import HeaderBuckets
from healthbench_exp.model.pacer.limits import AdaptiveLimit, LoopTurns
from healthbench_exp.model.pacer.pace import EndpointPacer, TurnLapsed, share_buckets
from healthbench_exp.model.pacer.refusals import (
    RateLimited,
    Refusal,
    brief_refusal,
    classify_429,
)
from healthbench_exp.model.pacer.server_waits import MAX_RETRY_AFTER_S, retry_after_s
from healthbench_exp.model.pacer.tickets import Ticket

__all__ = [
    "MAX_RETRY_AFTER_S",
    "AdaptiveLimit",
    "EndpointPacer",
    "HeaderBuckets",
    "LoopTurns",
    "RateLimited",
    "Refusal",
    "Ticket",
    "TurnLapsed",
    "brief_refusal",
    "classify_429",
    "retry_after_s",
    "share_buckets",
]

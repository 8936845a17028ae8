"""The persistent response cache (docs/architecture.md, docs/reliability.md): every paid reply,
stored once in one SQLite file, so nothing is paid twice and runs sharing the cache pay once per
call.

Where each part lives, bottom up (each imports only those above it in this list):

- `database`: the cache file opened, for writing (created or upgraded to the current tables, in
  WAL mode) or read-only (a shared copy this user may not write); its name (`CACHE_FILE`) and a
  run's own call journal when the shared cache is off (`CALL_JOURNAL`).
- `profiles`: what each entry's calls were (`Profile`: role, model, endpoint and the settings
  that change a reply's length) and its row in the `profiles` table.
- `claims`: claims on the cache's keys (`KeyClaims`, `Claim`: a lock on one byte of
  `claims.lock` per key), so processes that miss the same key wait for one reply.
- `store`: the cache as a run uses it (`ResponseCache`: lookup, put, commit; `CachedReply`), the
  request's key (`RequestKeys`, `request_key`) and where the cache lives (`cache_dir`).
- `admin`: the file read and managed: history per profile for the dry run (`profile_history`,
  `History`), groups, the last runs' lookups, removal in short transactions (`Selection`).
- `commands`: what `python -m healthbench_exp.cache stats | prune | clear` do and print.

Around it, outside this package: one call's way through the cache, shared by the endpoint and
the batch judge and counted in the endpoint's stats (`model.replay`), the caches a run opens
(`model.roles`) and the command line (`healthbench_exp.cache`). The package imports only `core`,
`config`, `model.reply_json`, itself and the standard library, and code outside it imports this
face or `commands` (tests/test_architecture.py).
"""

from healthbench_exp.model.cache.admin import (
    HISTORY_MIN_REPLIES,
    History,
    Selection,
    profile_history,
)
from healthbench_exp.model.cache.claims import WAITING, Claim
from healthbench_exp.model.cache.database import CACHE_FILE, CALL_JOURNAL, discard_call_journal
from healthbench_exp.model.cache.profiles import Profile
from healthbench_exp.model.cache.store import (
    CachedReply,
    RequestKeys,
    ResponseCache,
    cache_dir,
    prompt_chars,
    request_key,
)

__all__ = [
    "CACHE_FILE",
    "CALL_JOURNAL",
    "HISTORY_MIN_REPLIES",
    "WAITING",
    "CachedReply",
    "Claim",
    "History",
    "Profile",
    "RequestKeys",
    "ResponseCache",
    "Selection",
    "cache_dir",
    "discard_call_journal",
    "profile_history",
    "prompt_chars",
    "request_key",
]

"""The built-in OpenAI-compatible endpoint (docs/builtin-endpoint.md): a real loopback HTTP server
with deterministic replies and seeded faults, so the whole pipeline runs without a network or a
key. Production code: the offline demo (`model=offline`, `judge=offline`) starts it for a run
(`engine.builtin`), `python -m healthbench_exp.offline_server` serves it on its own; the tests
and benches use it as their server.

Where each part lives:

- `server`: the process (`ServerProcess`: started, ready, stopped with its parent), its flags
  (`server_args`, `argument_parser`) and `main`.
- `routes`: the HTTP side (`OfflineServer`, `serve`): aiohttp routes over the replies, the batch
  store and the account's limits.
- `replies`: the deterministic model replies and judge verdicts, and the seeded faults
  (`Faults`, `completion_response`).
- `responses`: the Responses API read as the chat completion it stands for, and written back.
- `batches`: the files and batches API (`BatchStore`), enough of OpenAI's for the Batch API.
- `limits`: the account's faults: rate limits with OpenAI's headers, an exhausted quota, a
  silent endpoint (`AccountLimits`).

Of this package's layers it imports only `core`, `config` and `model`; only `engine.builtin` and
the `offline_server` entry module import it (tests/test_architecture.py).
Test-only fakes (the fake clock) are in `healthbench_exp.testing`, which no production module
imports.
"""

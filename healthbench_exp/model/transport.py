"""How an endpoint's requests travel: its transport settings and its `openai.AsyncOpenAI` clients.

`runner.http_client` picks the transport: `aiohttp` (the default) and `httpx` send through the
real openai client (`SdkClients`), `direct` through `http.DirectPoster`. Either posts a request
body (to `/chat/completions` or `/responses`: the endpoint's API) and returns the reply's JSON,
or raises `http.HttpError` named as the openai client names its errors, and reports every HTTP
answer (retried ones included) to the endpoint.

Clients are created inside the running event loop (one per run), never at import time: a
module-level client breaks the second job of a multirun with "Event loop is closed".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, cast

from healthbench_exp.config.schema import EndpointConfig, HttpClient, RunnerConfig
from healthbench_exp.model.access import ClientSettings, shared_tls_context
from healthbench_exp.model.http import Answer, HttpError, unanswered_error, with_retries

if TYPE_CHECKING:
    import httpx
    import openai

CONNECTIONS_PER_CLIENT = 16
FLEX_TIMEOUT_S = 900.0  # OpenAI's advice for service_tier=flex: a 15-minute client timeout
# the endpoint's hook for every HTTP answer: its status and headers
OnResponse = Callable[[int, Mapping[str, str]], None]
# the openai client's header asking for the raw response (openai._constants.RAW_RESPONSE_HEADER)
_RAW_RESPONSE = "X-Stainless-Raw-Response"
# its hook for every attempt that got no HTTP answer (refused, timed out)
OnUnanswered = Callable[[HttpError], None]


@dataclass(frozen=True)
class Transport:
    """How an endpoint's requests travel: the client's retries, the timeouts, the HTTP client."""

    max_retries: int = 4
    timeout_s: float = 180.0
    connect_timeout_s: float | None = None  # None: timeout_s
    http_client: HttpClient = HttpClient.aiohttp

    @classmethod
    def of(cls, runner: RunnerConfig, endpoint: EndpointConfig) -> Transport:
        """The runner's settings for `endpoint` (a reasoning one waits longer for its reply, a
        flex one at least FLEX_TIMEOUT_S: OpenAI advises 15 minutes for flex's slower replies)."""
        timeout = (
            runner.reasoning_request_timeout_s if endpoint.reasoning else runner.request_timeout_s
        )
        if endpoint.service_tier == "flex":
            timeout = max(timeout, FLEX_TIMEOUT_S)
        return cls(runner.max_retries, timeout, runner.connect_timeout_s, runner.http_client)


class SdkClients:
    """An endpoint's `openai.AsyncOpenAI` clients, used in turn, made at the first request (in
    the event loop; a run answered from the cache never imports openai)."""

    def __init__(
        self,
        settings: ClientSettings,
        transport: Transport,
        max_concurrency: int,
        on_response: OnResponse,
        path: str = "/chat/completions",
        on_unanswered: OnUnanswered = lambda error: None,
        before_retry: Callable[[], None] = lambda: None,
        *,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self.settings = settings
        self.sleep = sleep  # the run's clock's: the waits between retries
        self.path = path  # what `post` posts to: the endpoint's API (`model.wire.PATHS`)
        self.transport = transport
        self.max_concurrency = max_concurrency
        self.on_response = on_response
        self.on_unanswered = on_unanswered
        self.before_retry = before_retry  # raises to send no retry (the run is halted)
        self.sent = 0
        self._clients: list[openai.AsyncOpenAI] = []

    @property
    def clients(self) -> list[openai.AsyncOpenAI]:
        """The clients; made on first use, in the event loop."""
        if not self._clients:
            import openai

            tls = shared_tls_context()
            hooks = {"response": [self._on_response]}
            if self.transport.http_client is HttpClient.aiohttp:
                # aiohttp's pool hands out connections in O(1): one client serves any concurrency
                transports = [openai.DefaultAioHttpClient(event_hooks=hooks, verify=tls)]
            else:
                # httpx's pool scans all its connections for every request, so one pool of 256
                # connections costs more CPU than the rest of the harness: several clients, used
                # in turn, of about CONNECTIONS_PER_CLIENT connections each keep that scan short
                transports = [
                    openai.DefaultAsyncHttpxClient(event_hooks=hooks, verify=tls)
                    for _ in range(-(-self.max_concurrency // CONNECTIONS_PER_CLIENT))
                ]
            timeout_s = self.transport.timeout_s
            connect = self.transport.connect_timeout_s or timeout_s
            timeout = openai.Timeout(timeout_s, connect=connect)
            self._clients = [
                openai.AsyncOpenAI(**self.settings, timeout=timeout, http_client=transport)
                for transport in transports
            ]
        return self._clients

    def open(self) -> None:
        """Make the clients now (the endpoint does before it marks a request sent: the first
        request would otherwise be marked sent up to half a second before it left)."""
        _ = self.clients

    async def _on_response(self, response: httpx.Response) -> None:
        if response.status_code == 429 and response.request.url.path.endswith(
            ("/chat/completions", "/responses")
        ):
            # not retried by the client's bounded retries: the endpoint waits as the server
            # says and sends it again (or stops the run on insufficient_quota)
            response.headers["x-should-retry"] = "false"
        self.on_response(response.status_code, response.headers)

    async def post(self, body: Mapping[str, object]) -> Answer:
        """What the endpoint answered; HttpError, named as the openai client names its errors.

        The client's bounded retries (`runner.max_retries`: connection errors, timeouts, 408,
        409, 5xx, with its backoff: `model.http.should_retry`, `retry_delay_s`) are made here,
        one client attempt at a time, so that every attempt that got no HTTP answer reaches
        `on_unanswered` (the endpoint's health counts each one) and a refused connection is
        named as one (`model.http.unanswered_error`)."""
        clients = self.clients
        client = clients[self.sent % len(clients)]
        self.sent += 1
        return await with_retries(
            partial(self._attempt, client, body),
            self.transport.max_retries,
            self.before_retry,
            self.sleep,
            self.on_unanswered,
        )

    async def _attempt(self, client: openai.AsyncOpenAI, body: Mapping[str, object]) -> Answer:
        """One attempt through the client's low-level post: its auth, timeouts and error types,
        without re-validating a body of plain strings or building pydantic models of the reply
        (together about 2 ms of CPU per request, more than the rest of the harness); asked for
        the raw response (as `with_raw_response` does) so that its headers come back with it."""
        import openai

        try:
            raw = await client.post(
                self.path,
                body=body,
                cast_to=object,
                options={"max_retries": 0, "headers": {_RAW_RESPONSE: "raw"}},  # one attempt, raw
            )
            answer = cast("openai.AsyncAPIResponse[object]", raw)
            return Answer(answer.status_code, answer.headers, await answer.parse())
        except openai.APIStatusError as exc:
            headers = exc.response.headers
            error = HttpError(type(exc).__name__, exc.message, exc.status_code, headers, exc.body)
            raise error from exc
        except openai.APIConnectionError as exc:  # APITimeoutError is one
            raise unanswered_error(type(exc).__name__, exc) from exc
        except openai.APIError as exc:  # a reply that is not JSON
            raise HttpError(type(exc).__name__, str(exc)) from exc

    async def close(self) -> None:
        for client in self._clients:
            await client.close()

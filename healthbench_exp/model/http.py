"""POST a chat completion (or a response) over one aiohttp session, as the openai client
would, for less CPU.

`runner.http_client=direct` (opt-in) sends requests through `DirectPoster`: the openai client's
(3.x) bearer auth, its bounded retries (connection errors, timeouts, 408, 409, 5xx;
`x-should-retry`; `retry-after(-ms)` honoured up to 120 s and no retry when it asks for longer,
else 0.5 s doubling to 8 s with jitter) and its timeouts (read and connect), and its errors by
the same names and messages (`InternalServerError: Error code: 500 - <the error's message>`,
`APITimeoutError: Request timed out.`), without building an httpx request, a pydantic options
model and header mappings for every call (about 1 ms of CPU per request in openai 3.x, as much
as all the rest of the harness). A rate-limit 429 is never retried here: the endpoint waits it
out (see `model.pacer`). `aiohttp` (the default) and `httpx` keep the openai client itself.
"""

from __future__ import annotations

import json
import math
import os
import random
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial

import aiohttp
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from healthbench_exp.model.pacer import MAX_RETRY_AFTER_S, retry_after_s

INITIAL_RETRY_DELAY_S = 0.5  # the openai client's backoff: 0.5 s, doubling ...
MAX_RETRY_DELAY_S = 8.0  # ... up to 8 s, times a jitter of 0.75 to 1
# why an attempt got no HTTP answer (`HttpError.kind`)
REFUSED, NO_REPLY, CONNECTION_ERROR = "refused", "no reply", "connection error"
_STATUS_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


class HttpError(Exception):
    """A request that failed, named as the openai client names it (`name`); `status` None when
    no HTTP answer came (APIConnectionError, APITimeoutError: then `kind` says why, see
    `unanswered_error`); `body` the error's JSON (its `error` object when it has one)."""

    def __init__(
        self,
        name: str,
        message: str,
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
        body: object = None,
        kind: str = "",
    ) -> None:
        super().__init__(message)
        self.name = name
        self.kind = kind  # no HTTP answer: REFUSED, NO_REPLY or CONNECTION_ERROR (see above)
        self.status = status
        self.headers: Mapping[str, str] = headers or {}
        self.body = body

    def __str__(self) -> str:
        return f"{self.name}: {self.args[0]}"


def unanswered_error(name: str, cause: BaseException) -> HttpError:
    """The error of an attempt that got no HTTP answer, from what the transport raised
    (`cause`; `name`: the openai client's class for it): a refused connection reads as one
    (`APIConnectionError: Connection refused ...`, whatever the transport called it: the
    openai client's aiohttp transport calls it a timeout), a timeout as `APITimeoutError:
    Request timed out.`, anything else as `APIConnectionError: Connection error.`; `kind` says
    which (`REFUSED`, `NO_REPLY`, `CONNECTION_ERROR`)."""
    kind = NO_REPLY if name == "APITimeoutError" else CONNECTION_ERROR
    link: BaseException | None = cause
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, ConnectionRefusedError):
            kind = REFUSED
            break
        dropped = isinstance(link, (ConnectionError, aiohttp.ClientConnectionError))
        if dropped and not isinstance(link, TimeoutError):  # (aiohttp's: a "ConnectTimeout")
            kind = CONNECTION_ERROR
        link = link.__cause__ or link.__context__
    if kind == REFUSED:
        message = "Connection refused (nothing listens at the endpoint's address)."
        error = HttpError("APIConnectionError", message, kind=REFUSED)
    elif kind == NO_REPLY:
        error = HttpError(name, "Request timed out.", kind=NO_REPLY)
    else:  # a connection that failed or was closed before the reply
        error = HttpError("APIConnectionError", "Connection error.", kind=CONNECTION_ERROR)
    error.__cause__ = cause
    return error


def status_error(status: int, headers: Mapping[str, str], raw: bytes) -> HttpError:
    """The openai client's error for a non-2xx answer: its class name, its message (the status,
    and the error's own `message` when the body is JSON that has one) and its body (the JSON's
    `error` object, else the JSON, else the text, '' when empty)."""
    text = raw.decode(errors="replace").strip()
    data: object = text
    message = f"Error code: {status}"
    try:
        data = json.loads(text)
    except ValueError:
        pass
    else:
        error = data.get("error", data) if isinstance(data, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        if isinstance(detail, str) and detail:
            message += f" - {detail}"
    body = data.get("error", data) if isinstance(data, dict) else data
    name = _STATUS_NAMES.get(status, "InternalServerError" if status >= 500 else "APIStatusError")
    return HttpError(name, message, status, headers, body)


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """The openai client's decision to retry an answer (a 429 is not retried here: the endpoint
    waits it out): never when the server asks to wait longer than MAX_RETRY_AFTER_S, else as
    `x-should-retry` says, else on 408, 409 and 5xx."""
    told = retry_after_s(headers)
    if told is not None and math.isfinite(told) and told > MAX_RETRY_AFTER_S:
        return False
    should = headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return status in (408, 409) or (status >= 500 and status != 429)


def retry_delay_s(attempt: int, headers: Mapping[str, str]) -> float:
    """The openai client's wait before retry `attempt` (0-based): the server's Retry-After when
    honoured, else backoff with jitter."""
    told = retry_after_s(headers)
    if told is not None and math.isfinite(told) and 0 < told <= MAX_RETRY_AFTER_S:
        return told
    delay = min(INITIAL_RETRY_DELAY_S * 2.0**attempt, MAX_RETRY_DELAY_S)
    return delay * (1 - 0.25 * random.random())


@dataclass(frozen=True, slots=True)
class Answer:
    """What an endpoint answered a request with: its HTTP `status` (2xx), its `headers` (the
    pacer learns the server's rate-limit buckets from them) and its `body` (the reply's JSON).
    A poster returns one; a failed request raises HttpError, which carries the same three."""

    status: int
    headers: Mapping[str, str]
    body: object


def retryable(error: HttpError) -> bool:
    """Whether the openai client would send again the attempt that failed with `error`: one
    that got no HTTP answer (`kind` set), or an answer `should_retry` retries (never a 429, nor
    a 2xx whose reply is not JSON)."""
    if error.kind:
        return True
    status = error.status
    return status is not None and 300 <= status != 429 and should_retry(status, error.headers)


async def with_retries(
    attempt: Callable[[], Awaitable[Answer]],
    max_retries: int,
    before_retry: Callable[[], None],
    sleep: Callable[[float], Awaitable[None]],
    on_unanswered: Callable[[HttpError], None],
) -> Answer:
    """The one retry loop of both posters (the openai client's bounded retries): `attempt`'s
    Answer, its HttpError sent again up to `max_retries` times while `retryable`, after
    `retry_delay_s` (slept on the run's clock, `sleep`); `before_retry` raises to send no retry
    (the run is halted); every attempt that got no HTTP answer reaches `on_unanswered`."""
    tries = 0
    while True:
        try:
            return await attempt()
        except HttpError as error:
            if error.kind:
                on_unanswered(error)
            if not retryable(error) or tries >= max_retries:
                raise
            headers = error.headers
        before_retry()
        await sleep(retry_delay_s(tries, headers))
        tries += 1


class DirectPoster:
    """`post(body)`: the parsed JSON reply of `{base_url}{path}` (`/chat/completions`, or
    `/responses`), or HttpError."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        max_retries: int,
        timeout_s: float,
        connect_timeout_s: float,
        tls: ssl.SSLContext,
        on_response: Callable[[int, Mapping[str, str]], None],
        path: str = "/chat/completions",
        on_unanswered: Callable[[HttpError], None] = lambda error: None,
        before_retry: Callable[[], None] = lambda: None,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        self.sleep = sleep  # the run's clock's: the waits between retries
        self.url = base_url.rstrip("/") + path  # the endpoint's API (`model.wire.PATHS`)
        self.headers = {
            "Authorization": f"Bearer {api_key}",
            "Content-Type": "application/json",
            "Accept": "application/json",
        }
        # what the openai client adds from the environment
        for header, env in (("OpenAI-Organization", "OPENAI_ORG_ID"),
                            ("OpenAI-Project", "OPENAI_PROJECT_ID")):  # fmt: skip
            if os.environ.get(env):
                self.headers[header] = os.environ[env]
        self.max_retries = max_retries
        self.timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=connect_timeout_s, sock_read=timeout_s
        )
        self.tls = tls
        self.on_response = on_response  # every HTTP answer, retried ones included
        self.on_unanswered = on_unanswered  # every attempt that got none, retried ones included
        self.before_retry = before_retry  # raises to send no retry (the run is halted)
        self._session: aiohttp.ClientSession | None = None
        self.proxy: tuple[URL | None, aiohttp.BasicAuth | None] = (None, None)

    def open(self) -> None:
        """Open the session now (the endpoint does before it marks a request sent)."""
        self._open()

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:  # in the event loop, at the first request
            connector = aiohttp.TCPConnector(limit=0, ssl=self.tls)
            # HTTP(S)_PROXY and NO_PROXY are honoured as the openai client (httpx) honours
            # them: read once, when the session opens. aiohttp's trust_env would read them and
            # ~/.netrc again for every request, in a thread (a fifth of the harness's CPU)
            self.proxy = env_proxy(self.url)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self.timeout, skip_auto_headers=("User-Agent",)
            )
        return self._session

    async def post(self, body: Mapping[str, object]) -> Answer:
        """What the endpoint answered `body` with; HttpError once `with_retries` gives up."""
        data = json.dumps(body, ensure_ascii=False).encode()
        return await with_retries(
            partial(self._attempt, data),
            self.max_retries,
            self.before_retry,
            self.sleep,
            self.on_unanswered,
        )

    async def _attempt(self, data: bytes) -> Answer:
        """One POST of `data`: its Answer, or HttpError (no answer, or not a usable one)."""
        session = self._open()
        proxy, proxy_auth = self.proxy
        try:
            async with session.post(
                self.url, data=data, headers=self.headers, proxy=proxy, proxy_auth=proxy_auth
            ) as response:
                raw = await response.read()
                status, headers = response.status, response.headers
        except TimeoutError as exc:  # aiohttp.ServerTimeoutError is one
            raise unanswered_error("APITimeoutError", exc) from exc
        except aiohttp.ClientError as exc:
            raise unanswered_error("APIConnectionError", exc) from exc
        self.on_response(status, headers)
        if status >= 300:
            raise status_error(status, headers, raw)
        try:
            return Answer(status, headers, json.loads(raw))
        except ValueError as exc:
            raise HttpError(
                "APIResponseValidationError", f"reply is not JSON ({exc})", status
            ) from None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


def env_proxy(url: str) -> tuple[URL | None, aiohttp.BasicAuth | None]:
    """The proxy the environment names for `url` (HTTP_PROXY or HTTPS_PROXY, unless NO_PROXY
    covers its host; credentials from the proxy URL or ~/.netrc), as aiohttp's `trust_env`
    finds it; (None, None) for none."""
    try:
        return get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None

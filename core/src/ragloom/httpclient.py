"""The HTTP client every HTTP-backed component shares: options, bearer auth, JSON POSTs with retries.

:class:`HTTPOptions` is the one options class (``base_url``, ``api_key``,
``timeout``, ``max_retries``, ``backoff``): a component's config subclasses it
and overrides defaults. :class:`JSONClient` POSTs JSON with those options over
an injected (or owned) ``httpx.Client``; on the async path (:mod:`ragloom.aio`)
it sends through an ``httpx.AsyncClient`` instead (:meth:`JSONClient.apost`,
:func:`apost_json`). Shared by the OpenAI-compatible chat
client and embedder, Cohere … Retried: 408, 409, 425, 429 and 5xx answers, timeouts and connection
errors; a ``Retry-After`` header (seconds or an HTTP date) replaces the backoff
delay for that attempt, capped by ``max_delay``. Everything else fails at once.
Failures raise the caller's error class (a RagloomError subclass taking
``status_code=``) with the server's own message, chained to the cause.
"""

from __future__ import annotations

import asyncio
import email.utils
import json as jsonlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

import attrs

from ragloom.errors import RagloomError
from ragloom.structuring import Secret

if TYPE_CHECKING:  # httpx is imported on first use: ``import ragloom`` stays light
    import httpx

RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
DEFAULT_MAX_DELAY = 60.0


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def server_message(response: httpx.Response, *, limit: int = 500) -> str:
    """The error message a server put in its response body (JSON ``error.message`` & co, or text)."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        text = response.text.strip() if response.content else ""
        return text[:limit] or response.reason_phrase or "no message"
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:limit]
        for key in ("message", "detail", "error"):
            if body.get(key):
                return str(body[key])[:limit]
    return jsonlib.dumps(body)[:limit]


def check_http_url(_instance: Any, attribute: Any, value: str) -> None:
    """attrs validator: an ``http://`` or ``https://`` URL."""
    if not value.startswith(("http://", "https://")):
        raise ValueError(f"'{attribute.name}' must start with http:// or https://, got {value!r}")


def _delay(attempt: int, backoff: float, retry_after: float | None, max_delay: float) -> float:
    if retry_after is not None:
        return min(retry_after, max_delay)
    return min(backoff * (2**attempt), max_delay)


class _Attempts:
    """The retry policy of :func:`post_json` and :func:`apost_json`, without the I/O (so both share it)."""

    def __init__(self, url: str, *, timeout: float | None, retries: int, backoff: float, error: type[RagloomError], max_delay: float):
        self.url, self.timeout, self.backoff, self.error, self.max_delay = url, timeout, backoff, error, max_delay
        self.count = max(0, retries) + 1
        self.last_exc: Exception | None = None
        self.message = ""
        self.status: int | None = None
        self.retry_after: float | None = None

    def failed(self, exc: Exception) -> None:
        """The request raised a timeout or transport error (retryable)."""
        import httpx

        self.last_exc, self.status, self.retry_after = exc, None, None
        if isinstance(exc, httpx.TimeoutException):
            self.message = f"POST {self.url} timed out after {self.timeout}s"
        else:
            self.message = f"POST {self.url} failed: {type(exc).__name__}: {exc}"

    def answered(self, response: httpx.Response) -> tuple[bool, Any]:
        """``(True, decoded JSON)`` for a 2xx answer; ``(False, None)`` to retry; raises when it must not retry."""
        status = self.status = response.status_code
        if 200 <= status < 300:
            try:
                return True, response.json()
            except (ValueError, UnicodeDecodeError) as exc:
                snippet = response.text[:200] if response.content else ""
                raise _make(self.error, f"POST {self.url}: the server answered malformed JSON: {snippet!r}", status) from exc
        self.message = f"POST {self.url} answered HTTP {status}: {server_message(response)}"
        if status not in RETRY_STATUSES:
            raise _make(self.error, self.message, status)
        self.last_exc = None
        self.retry_after = parse_retry_after(response.headers.get("retry-after"))
        return False, None

    def wait(self, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None after the last one."""
        return _delay(attempt, self.backoff, self.retry_after, self.max_delay) if attempt + 1 < self.count else None

    def raise_failure(self) -> NoReturn:
        suffix = f" (after {self.count} attempts)" if self.count > 1 else ""
        raise _make(self.error, self.message + suffix, self.status) from self.last_exc


def post_json(
    client: httpx.Client,
    url: str,
    *,
    json: Any,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    retries: int = 3,
    backoff: float = 0.5,
    error: type[RagloomError] = RagloomError,
    max_delay: float = DEFAULT_MAX_DELAY,
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """POST ``json`` to ``url`` and return the decoded JSON answer.

    Up to ``retries`` further attempts after the first. Raises ``error`` with
    ``.status_code`` (None for network failures) and the server's message.
    """
    import httpx

    attempts = _Attempts(url, timeout=timeout, retries=retries, backoff=backoff, error=error, max_delay=max_delay)
    for attempt in range(attempts.count):
        try:
            response = client.post(url, json=json, headers=dict(headers or {}), timeout=timeout)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            attempts.failed(exc)
        else:
            done, answer = attempts.answered(response)
            if done:
                return answer
        if (wait := attempts.wait(attempt)) is not None:
            sleep(wait)
    attempts.raise_failure()


def _make(error: type[RagloomError], message: str, status: int | None) -> RagloomError:
    try:
        return error(message, status_code=status)  # type: ignore[call-arg]
    except TypeError:  # an error class without status_code
        exc = error(message)
        exc.status_code = status  # type: ignore[attr-defined]
        return exc


@attrs.frozen(kw_only=True)
class HTTPOptions:
    """Options of an HTTP-backed component: endpoint, secret key, timeout and retries.

    Subclass it for a component's config (redefine a field to change its default).
    """

    base_url: str = attrs.field(default="https://api.openai.com/v1", validator=check_http_url)
    api_key: Secret | None = None
    timeout: float = attrs.field(default=60.0, validator=attrs.validators.gt(0))
    max_retries: int = attrs.field(default=3, validator=attrs.validators.ge(0))
    backoff: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))

    def auth_headers(self) -> dict[str, str]:
        """``{"Authorization": "Bearer <key>"}`` when an ``api_key`` is set (read now), else ``{}``."""
        return auth_headers(self.api_key)


def auth_headers(api_key: Secret | None) -> dict[str, str]:
    """The bearer ``Authorization`` header of a secret key (``{}`` without one)."""
    return {"Authorization": f"Bearer {api_key.get()}"} if api_key is not None else {}


class JSONClient:
    """POSTs JSON to ``{base_url}/<path>`` with the options' auth, timeout and retries.

    Give it an ``httpx.Client`` to share or fault-inject; without one it opens
    its own (``max_connections`` wide) and :meth:`close` closes it.
    """

    def __init__(
        self,
        options: HTTPOptions,
        *,
        client: httpx.Client | None = None,
        headers: Mapping[str, str] | None = None,
        max_connections: int | None = None,
        async_client: httpx.AsyncClient | None = None,
    ):
        self.options = options
        self.base_url = options.base_url.rstrip("/")
        self.headers = {**options.auth_headers(), **dict(headers or {})}
        self._owns_client = client is None
        if client is None:
            import httpx

            client = httpx.Client(limits=httpx.Limits(max_connections=max_connections)) if max_connections else httpx.Client()
        self.client = client
        from ragloom.aio import AsyncClients

        self._async = AsyncClients(lambda: _new_async_client(max_connections), injected=async_client)

    def url(self, path: str) -> str:
        """The full URL of an endpoint path."""
        return f"{self.base_url}/{path.lstrip('/')}"

    def post(self, path: str, body: Any, *, error: type[RagloomError] = RagloomError) -> Any:
        """The decoded JSON answer, or ``error`` with the server's message and status code.

        Called from a worker of the async path, the request goes out on that event loop (:meth:`apost`).
        """
        from ragloom.aio import bridge

        bridged, answer = bridge(lambda: self.apost(path, body, error=error))
        if bridged:
            return answer
        o = self.options
        return post_json(
            self.client,
            self.url(path),
            json=body,
            headers=self.headers,
            timeout=o.timeout,
            retries=o.max_retries,
            backoff=o.backoff,
            error=error,
        )

    async def apost(self, path: str, body: Any, *, error: type[RagloomError] = RagloomError) -> Any:
        """:meth:`post` over this event loop's ``httpx.AsyncClient``."""
        o = self.options
        return await apost_json(
            self._async.get(),
            self.url(path),
            json=body,
            headers=self.headers,
            timeout=o.timeout,
            retries=o.max_retries,
            backoff=o.backoff,
            error=error,
        )

    def close(self) -> None:
        """Close the connection pool if this client opened it."""
        if self._owns_client:
            self.client.close()

    async def aclose(self) -> None:
        """Close this event loop's async connection pool (an injected one belongs to its owner)."""
        await self._async.aclose()


def _new_async_client(max_connections: int | None) -> httpx.AsyncClient:
    import httpx

    return httpx.AsyncClient(limits=httpx.Limits(max_connections=max_connections)) if max_connections else httpx.AsyncClient()


async def apost_json(
    client: httpx.AsyncClient,
    url: str,
    *,
    json: Any,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    retries: int = 3,
    backoff: float = 0.5,
    error: type[RagloomError] = RagloomError,
    max_delay: float = DEFAULT_MAX_DELAY,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Any:
    """:func:`post_json` over an ``httpx.AsyncClient``: same retries, same errors."""
    import httpx

    attempts = _Attempts(url, timeout=timeout, retries=retries, backoff=backoff, error=error, max_delay=max_delay)
    for attempt in range(attempts.count):
        try:
            response = await client.post(url, json=json, headers=dict(headers or {}), timeout=timeout)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            attempts.failed(exc)
        else:
            done, answer = attempts.answered(response)
            if done:
                return answer
        if (wait := attempts.wait(attempt)) is not None:
            await sleep(wait)
    attempts.raise_failure()

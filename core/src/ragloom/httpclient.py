"""JSON POSTs with retries, exponential backoff and ``Retry-After``, over an injected httpx.Client.

:func:`apost_json` is the same over an ``httpx.AsyncClient`` (the async path,
see :mod:`ragloom.aio`). Shared by every HTTP-backed component (OpenAI-compatible chat and embeddings,
Cohere …). Retried: 408, 409, 425, 429 and 5xx answers, timeouts and connection
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
from typing import TYPE_CHECKING, Any

from ragloom.errors import RagloomError

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

    attempts = max(0, retries) + 1
    last_exc: Exception | None = None
    message = ""
    status: int | None = None
    for attempt in range(attempts):
        retry_after: float | None = None
        try:
            response = client.post(url, json=json, headers=dict(headers or {}), timeout=timeout)
        except httpx.TimeoutException as exc:
            last_exc, status = exc, None
            message = f"POST {url} timed out after {timeout}s"
        except httpx.TransportError as exc:
            last_exc, status = exc, None
            message = f"POST {url} failed: {type(exc).__name__}: {exc}"
        else:
            status = response.status_code
            if 200 <= status < 300:
                try:
                    return response.json()
                except (ValueError, UnicodeDecodeError) as exc:
                    snippet = response.text[:200] if response.content else ""
                    raise _make(error, f"POST {url}: the server answered malformed JSON: {snippet!r}", status) from exc
            message = f"POST {url} answered HTTP {status}: {server_message(response)}"
            if status not in RETRY_STATUSES:
                raise _make(error, message, status)
            last_exc = None
            retry_after = parse_retry_after(response.headers.get("retry-after"))
        if attempt + 1 < attempts:
            sleep(_delay(attempt, backoff, retry_after, max_delay))
    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
    exc_out = _make(error, message + suffix, status)
    if last_exc is not None:
        raise exc_out from last_exc
    raise exc_out


def _make(error: type[RagloomError], message: str, status: int | None) -> RagloomError:
    try:
        return error(message, status_code=status)  # type: ignore[call-arg]
    except TypeError:  # an error class without status_code
        exc = error(message)
        exc.status_code = status  # type: ignore[attr-defined]
        return exc


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

    attempts = max(0, retries) + 1
    last_exc: Exception | None = None
    message = ""
    status: int | None = None
    for attempt in range(attempts):
        retry_after: float | None = None
        try:
            response = await client.post(url, json=json, headers=dict(headers or {}), timeout=timeout)
        except httpx.TimeoutException as exc:
            last_exc, status = exc, None
            message = f"POST {url} timed out after {timeout}s"
        except httpx.TransportError as exc:
            last_exc, status = exc, None
            message = f"POST {url} failed: {type(exc).__name__}: {exc}"
        else:
            status = response.status_code
            if 200 <= status < 300:
                try:
                    return response.json()
                except (ValueError, UnicodeDecodeError) as exc:
                    snippet = response.text[:200] if response.content else ""
                    raise _make(error, f"POST {url}: the server answered malformed JSON: {snippet!r}", status) from exc
            message = f"POST {url} answered HTTP {status}: {server_message(response)}"
            if status not in RETRY_STATUSES:
                raise _make(error, message, status)
            last_exc = None
            retry_after = parse_retry_after(response.headers.get("retry-after"))
        if attempt + 1 < attempts:
            await sleep(_delay(attempt, backoff, retry_after, max_delay))
    suffix = f" (after {attempts} attempts)" if attempts > 1 else ""
    exc_out = _make(error, message + suffix, status)
    if last_exc is not None:
        raise exc_out from last_exc
    raise exc_out

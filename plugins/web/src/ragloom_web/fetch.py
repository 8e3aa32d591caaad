"""Fetching one URL: redirects hop by hop, robots.txt, retries, timeouts, bounded bodies.

Every hop is parsed strictly (:func:`ragloom_web.urls.parse_url`: the scheme
must stay http/https), its address checked (literal IPs and special names
before anything else, resolved names in the transport), checked against
robots.txt, and only then requested. Bodies are read raw and decoded here
(:mod:`ragloom_web.decoding`) so the limit applies to decoded bytes.
"""

from __future__ import annotations

import contextlib
import datetime
import re
import threading
import time
from collections.abc import Callable, Iterator

import attrs
import httpx

from ragloom.plugin import (
    AsyncClients,
    BlockedAddressError,
    ResponseTooLargeError,
    RobotsDisallowedError,
    WebLoaderError,
    bridge,
    parse_retry_after,
)
from ragloom_web.addresses import AddressGuard
from ragloom_web.config import WebLoaderConfig
from ragloom_web.decoding import ACCEPT_ENCODING, PIECE, decode_stream, parse_content_encoding
from ragloom_web.robots import MAX_ROBOTS_BYTES, RobotsCache, RobotsRules, rules_for_status
from ragloom_web.transport import exchange_deadline
from ragloom_web.urls import ParsedURL, parse_url, resolve_reference

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
ROBOTS_MAX_REDIRECTS = 5
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,application/xml;q=0.8,*/*;q=0.1"
_CHARSET = re.compile(r"""charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


@attrs.frozen(kw_only=True)
class Fetched:
    """A final (non-redirect) response; ``body`` is decoded and empty unless the status is 2xx."""

    url: str
    requested_url: str
    status: int
    content_type: str
    charset: str | None
    body: bytes
    truncated: bool
    fetched_at: str
    retry_after: float | None = None


@attrs.frozen
class _Redirect:
    location: str


class _Retryable(Exception):
    def __init__(self, error: WebLoaderError, retry_after: float | None = None):
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


def parse_content_type(value: str | None) -> tuple[str, str | None]:
    """``(mime type, charset)`` of a Content-Type header (``("", None)`` when absent)."""
    if not value:
        return "", None
    mime = value.split(";", 1)[0].strip().lower()
    match = _CHARSET.search(value)
    return mime, match.group(1) if match else None


class HostThrottle:
    """At most ``per_host`` requests at a time per site, started at least ``delay`` seconds apart."""

    def __init__(self, per_host: int, delay: float):
        self.per_host = per_host
        self.delay = delay
        self._lock = threading.Lock()
        self._slots: dict[str, threading.Semaphore] = {}
        self._next_start: dict[str, float] = {}
        self._delays: dict[str, float] = {}

    def set_delay(self, site: str, delay: float) -> None:
        """A longer delay for one site (robots.txt ``Crawl-delay``)."""
        with self._lock:
            self._delays[site] = max(self.delay, delay)

    @contextlib.contextmanager
    def slot(self, site: str) -> Iterator[None]:
        """Hold one of the site's request slots, after waiting for its politeness delay."""
        with self._lock:
            semaphore = self._slots.setdefault(site, threading.Semaphore(self.per_host))
        semaphore.acquire()
        try:
            with self._lock:
                now = time.monotonic()
                start = max(now, self._next_start.get(site, now))
                self._next_start[site] = start + self._delays.get(site, self.delay)
            if start > now:
                time.sleep(start - now)
            yield
        finally:
            semaphore.release()


class Fetcher:
    """Fetches URLs with one httpx client; shares robots rules and throttling with its loader."""

    def __init__(
        self,
        config: WebLoaderConfig,
        guard: AddressGuard,
        client: httpx.Client,
        robots: RobotsCache,
        throttle: HostThrottle,
        secret_headers: dict[str, str] | None = None,
        async_clients: AsyncClients | None = None,
    ):
        self.config = config
        self.guard = guard
        self.client = client
        self.robots = robots
        self.throttle = throttle
        self.secret_headers = dict(secret_headers or {})
        self.async_clients = async_clients

    # ------------------------------------------------------------------ public

    def fetch(self, url: str) -> Fetched:
        """The final 2xx response of ``url``; WebLoaderError (or a subclass) naming ``url`` otherwise."""
        start = parse_url(url)
        try:
            fetched = self._follow(start, max_redirects=self.config.max_redirects, robots=self.config.respect_robots,
                                   max_bytes=self.config.max_response_bytes, on_too_large=self.config.on_too_large,
                                   secrets_for=start.site)
        except WebLoaderError as exc:
            raise type(exc)(exc.reason, source=start.url, position=exc.position) from exc
        if not 200 <= fetched.status < 300:
            where = "" if fetched.url == start.url else f" (redirected to {fetched.url})"
            error = WebLoaderError(f"HTTP {fetched.status}{where}", source=start.url)
            error.status_code = fetched.status  # type: ignore[attr-defined]
            raise error
        return fetched

    def robots_rules(self, parsed: ParsedURL, *, send_secrets: bool = False) -> RobotsRules:
        """The robots.txt rules of the URL's site (cached); ``secret_headers`` go with it only if ``send_secrets``."""
        return self.robots.get(parsed.site, lambda: self._fetch_robots(parsed, send_secrets))

    # ------------------------------------------------------------------ hops

    def _follow(self, start: ParsedURL, *, max_redirects: int, robots: bool, max_bytes: int, on_too_large: str, secrets_for: str | None) -> Fetched:
        """Follow redirects from ``start``; secret headers go to ``secrets_for`` only, and never again once a hop left it."""
        deadline = time.monotonic() + self.config.total_timeout
        current = start
        for _hop in range(max_redirects + 1):
            prefix = "" if current.url == start.url else f"redirect to {current.url}: "
            if current.site != secrets_for:
                secrets_for = None  # a cross-origin hop: no secrets for the rest of the chain, even back at the origin
            send_secrets = secrets_for is not None
            try:
                self._precheck(current)
                if robots:
                    self._check_robots(current, send_secrets)
                outcome = self._request(current, deadline, send_secrets=send_secrets, max_bytes=max_bytes, on_too_large=on_too_large)
            except WebLoaderError as exc:
                raise type(exc)(prefix + exc.reason) from exc
            if isinstance(outcome, Fetched):
                return attrs.evolve(outcome, requested_url=start.url)
            try:
                current = parse_url(resolve_reference(current.url, outcome.location))
            except WebLoaderError as exc:
                raise WebLoaderError(f"redirect from {current.url} refused: {exc.reason}") from None
        raise WebLoaderError(f"more than {max_redirects} redirects (max_redirects); last was to {current.url}")

    def _precheck(self, parsed: ParsedURL) -> None:
        """Refuse literal addresses and special names before robots.txt or any connection."""
        if parsed.ip is not None:
            self.guard.check_ip(parsed.ip)
        else:
            self.guard.check_name(parsed.host)

    def _check_robots(self, parsed: ParsedURL, send_secrets: bool) -> None:
        rules = self.robots_rules(parsed, send_secrets=send_secrets)
        if not rules.allows(parsed.url, self.config.user_agent):
            why = f" ({rules.why})" if rules.why else ""
            raise RobotsDisallowedError(f"robots.txt of {parsed.site} disallows {parsed.url}{why}")
        delay = rules.crawl_delay(self.config.user_agent)
        if delay:
            self.throttle.set_delay(parsed.site, min(delay, self.config.max_crawl_delay))

    def _fetch_robots(self, parsed: ParsedURL, send_secrets: bool) -> RobotsRules:
        robots_url = parse_url(f"{parsed.site}/robots.txt")
        try:
            fetched = self._follow(robots_url, max_redirects=ROBOTS_MAX_REDIRECTS, robots=False, max_bytes=MAX_ROBOTS_BYTES,
                                   on_too_large="truncate", secrets_for=robots_url.site if send_secrets else None)
        except BlockedAddressError:
            raise
        except WebLoaderError as exc:
            if exc.reason.startswith("more than"):
                return rules_for_status(310, "")
            return RobotsRules(policy="disallow-all", why=f"robots.txt is unreachable: {exc.reason}")
        text = fetched.body.decode("utf-8", "replace").lstrip("\ufeff")
        return rules_for_status(fetched.status, text)

    # ------------------------------------------------------------------ one request, with retries

    def _request(self, url: ParsedURL, deadline: float, *, send_secrets: bool, max_bytes: int, on_too_large: str) -> Fetched | _Redirect:
        attempt = 0
        while True:
            try:
                with self.throttle.slot(url.site):
                    outcome = self._once(url, deadline, send_secrets=send_secrets, max_bytes=max_bytes, on_too_large=on_too_large)
                if isinstance(outcome, Fetched) and outcome.status in RETRY_STATUSES and attempt < self.config.retries:
                    raise _Retryable(WebLoaderError(f"HTTP {outcome.status}"), outcome.retry_after)
                return outcome
            except _Retryable as retry:
                attempt += 1
                if attempt > self.config.retries:
                    raise retry.error from None
                wait = retry.retry_after if retry.retry_after is not None else self.config.backoff * 2 ** (attempt - 1)
                if wait > self.config.max_retry_wait:
                    raise WebLoaderError(f"{retry.error.reason}; Retry-After asks for {wait:.0f}s, over max_retry_wait") from None
                if time.monotonic() + wait >= deadline:
                    raise WebLoaderError(f"{retry.error.reason}; no time left to retry within total_timeout") from None
                time.sleep(wait)

    def _timeout(self, deadline: float) -> httpx.Timeout:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise WebLoaderError(f"timed out: total_timeout of {self.config.total_timeout}s exceeded")
        read = min(self.config.read_timeout, remaining)
        return httpx.Timeout(connect=min(self.config.connect_timeout, remaining), read=read, write=read, pool=remaining)

    def _headers(self, send_secrets: bool) -> httpx.Headers:
        headers = httpx.Headers({"User-Agent": self.config.user_agent, "Accept": ACCEPT, "Accept-Encoding": ACCEPT_ENCODING})
        headers.update(self.config.headers)  # a name in any letter case replaces the default, it is not sent beside it
        if send_secrets:
            headers.update(self.secret_headers)
        return headers

    def _once(self, url: ParsedURL, deadline: float, *, send_secrets: bool, max_bytes: int, on_too_large: str) -> Fetched | _Redirect:
        request = self.client.build_request("GET", url.url, headers=self._headers(send_secrets), timeout=self._timeout(deadline))
        if self.async_clients is not None:
            bridged, response = bridge(lambda: self._asend(request, deadline))
            if bridged:
                assert response is not None
                return self._areceive(response, url, deadline, max_bytes=max_bytes, on_too_large=on_too_large)
        with exchange_deadline(deadline):
            return self._send(request, url, deadline, max_bytes=max_bytes, on_too_large=on_too_large)

    def _send(self, request: httpx.Request, url: ParsedURL, deadline: float, *, max_bytes: int, on_too_large: str) -> Fetched | _Redirect:
        with self._errors(deadline, body=False):
            response = self.client.send(request, stream=True)
        try:
            with self._errors(deadline, body=True):
                return self._outcome(response, url, lambda: self._read_body(response.headers, response.iter_raw(), deadline, max_bytes, on_too_large))
        finally:
            response.close()

    # the async path: the same steps in this worker thread, each network wait on the caller's event loop

    async def _asend(self, request: httpx.Request, deadline: float) -> httpx.Response:
        assert self.async_clients is not None
        with exchange_deadline(deadline), self._errors(deadline, body=False):
            return await self.async_clients.get().send(request, stream=True)

    def _areceive(self, response: httpx.Response, url: ParsedURL, deadline: float, *, max_bytes: int, on_too_large: str) -> Fetched | _Redirect:
        raw = response.aiter_raw()

        async def next_piece() -> bytes | None:
            with exchange_deadline(deadline):
                try:
                    return await raw.__anext__()
                except StopAsyncIteration:
                    return None

        def pieces() -> Iterator[bytes]:
            while (piece := bridge(next_piece)[1]) is not None:
                yield piece

        try:
            with self._errors(deadline, body=True):
                return self._outcome(response, url, lambda: self._read_body(response.headers, pieces(), deadline, max_bytes, on_too_large))
        finally:
            bridge(response.aclose)

    @contextlib.contextmanager
    def _errors(self, deadline: float, *, body: bool) -> Iterator[None]:
        """httpx's failures (before the headers, or ``body``: while reading it) as WebLoaderErrors; timeouts and
        connection failures retryable until the deadline."""
        try:
            yield
        except httpx.TimeoutException as exc:
            if time.monotonic() >= deadline:
                when = "while reading the body" if body else "before the response headers arrived"
                raise WebLoaderError(f"timed out: total_timeout of {self.config.total_timeout}s exceeded {when}") from None
            raise _Retryable(WebLoaderError(f"timed out{' reading the body' if body else ''} ({type(exc).__name__})")) from None
        except httpx.TransportError as exc:
            raise _Retryable(WebLoaderError(f"connection failed{' while reading the body' if body else ''}: {exc or type(exc).__name__}")) from None
        except httpx.InvalidURL as exc:  # httpx prepares the next request of a redirect even when not following it
            if body:
                raise WebLoaderError(f"reading the response failed: {exc}") from None
            raise WebLoaderError(f"redirect refused: the Location header is not a usable URL ({exc})") from None
        except httpx.HTTPError as exc:
            raise WebLoaderError(f"{'reading the response' if body else 'request'} failed: {exc or type(exc).__name__}") from None

    def _outcome(self, response: httpx.Response, url: ParsedURL, body: Callable[[], tuple[bytes, bool]]) -> Fetched | _Redirect:
        status = response.status_code
        if status in REDIRECT_STATUSES:
            location = response.headers.get("location")
            if not location:
                raise WebLoaderError(f"HTTP {status} redirect without a Location header")
            return _Redirect(location)
        mime, charset = parse_content_type(response.headers.get("content-type"))
        data, truncated = body() if 200 <= status < 300 else (b"", False)
        return Fetched(
            url=url.url,
            requested_url=url.url,
            status=status,
            content_type=mime,
            charset=charset,
            body=data,
            truncated=truncated,
            fetched_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            retry_after=parse_retry_after(response.headers.get("retry-after")) if status in RETRY_STATUSES else None,
        )

    def _read_body(self, headers: httpx.Headers, raw: Iterator[bytes], deadline: float, max_bytes: int, on_too_large: str) -> tuple[bytes, bool]:
        codings = parse_content_encoding(headers.get("content-encoding"))
        declared = headers.get("content-length")
        if not codings and declared and declared.isdigit() and int(declared) > max_bytes and on_too_large == "fail":
            raise ResponseTooLargeError(f"Content-Length {declared} is over max_response_bytes ({max_bytes})")
        raw_budget = max_bytes + max_bytes // 8 + PIECE

        def raw_chunks() -> Iterator[bytes]:
            seen = 0
            for chunk in raw:
                seen += len(chunk)
                if seen > raw_budget:
                    raise ResponseTooLargeError(f"compressed body is over {raw_budget} bytes (max_response_bytes {max_bytes})")
                if time.monotonic() > deadline:
                    raise WebLoaderError(f"timed out: total_timeout of {self.config.total_timeout}s exceeded while reading the body")
                yield chunk

        body = bytearray()
        pieces = decode_stream(raw_chunks(), codings)
        try:
            for piece in pieces:
                if len(body) + len(piece) > max_bytes:
                    if on_too_large == "fail":
                        raise ResponseTooLargeError(f"decoded body is over max_response_bytes ({max_bytes})")
                    body += piece[: max_bytes - len(body)]
                    return bytes(body), True
                body += piece
        finally:
            pieces.close()
        return bytes(body), False

"""The ``web`` loader: one http(s) page per document, or every page of a sitemap.

``load(url)`` fetches the URL; an HTML, text or JSON page becomes one
document whose ``source`` is the final normalised URL; a sitemap (or sitemap
index) becomes one document per listed page, fetched concurrently (at most
``max_concurrency`` at once, ``per_host_concurrency`` per site, requests to a
site ``politeness_delay`` apart). A failing page never loses the others: the
good pages are yielded, then one :class:`WebLoaderError` lists the failures
(``on_url_error = "skip"`` logs them instead).

On the async path (``await pipeline.aingest(url)``) every request goes out on
the caller's event loop through an ``httpx.AsyncClient`` with the same address
guard, deadlines and limits; the crawl's worker threads carry that loop along.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import ssl
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from ragloom.plugin import AsyncClients, Document, RagloomError, WebLoaderError
from ragloom_web.addresses import AddressGuard, Resolver, parse_networks, system_resolver
from ragloom_web.config import WebLoaderConfig
from ragloom_web.content import kind_of, to_document
from ragloom_web.decoding import decode_stream
from ragloom_web.fetch import Fetched, Fetcher, HostThrottle
from ragloom_web.robots import RobotsCache
from ragloom_web.sitemap import parse_sitemap
from ragloom_web.transport import make_async_client, make_client, make_ssl_context

logger = logging.getLogger("ragloom_web")


class WebLoader:
    """Loads http(s) URLs safely; see docs/web.md for every option and the security model."""

    def __init__(self, config: WebLoaderConfig | None = None, *, resolver: Resolver | None = None):
        self.config = config or WebLoaderConfig()
        self.guard = AddressGuard(
            allow_private_network=self.config.allow_private_network,
            allowed_networks=parse_networks(self.config.allowed_networks),
            blocked_networks=parse_networks(self.config.blocked_networks),
            resolver=resolver or system_resolver,
        )
        self.robots = RobotsCache(self.config.robots_cache_ttl)
        self.throttle = HostThrottle(self.config.per_host_concurrency, self.config.politeness_delay)
        self._secret_headers = {name: secret.get() for name, secret in self.config.secret_headers.items()}
        self._ssl_context: ssl.SSLContext | None = None
        #: the async path's clients, one per event loop (closed by ``aclose``)
        self.async_clients = AsyncClients(
            lambda: make_async_client(self.guard, self.ssl_context(), max_connections=self.config.max_concurrency * 2)
        )

    def ssl_context(self) -> ssl.SSLContext:
        """The TLS settings every connection uses, made once."""
        if self._ssl_context is None:
            self._ssl_context = make_ssl_context(verify=self.config.verify_tls, ca_bundle=self.config.ca_bundle)
        return self._ssl_context

    @contextlib.contextmanager
    def fetcher(self) -> Iterator[Fetcher]:
        """A fetcher with its own connection pool, closed afterwards (robots rules and throttling are shared)."""
        client = make_client(self.guard, self.ssl_context(), max_connections=self.config.max_concurrency * 2)
        try:
            yield Fetcher(self.config, self.guard, client, self.robots, self.throttle, self._secret_headers, self.async_clients)
        finally:
            client.close()

    async def aclose(self) -> None:
        """Close this event loop's async connection pool."""
        await self.async_clients.aclose()

    def load(self, source: str) -> Iterator[Document]:
        """One document for a page; one per listed page for a sitemap."""
        with self.fetcher() as fetcher:
            fetched = fetcher.fetch(source)
            kind = kind_of(fetched)
            if kind in ("xml", "gzip"):
                yield from self._load_sitemap(fetcher, fetched, kind)
            else:
                yield to_document(fetched, kind, self.config)

    def load_many(self, urls: Iterable[str]) -> Iterator[Document]:
        """Documents of many page URLs, fetched concurrently; failures reported at the end."""
        urls = list(urls)
        with self.fetcher() as fetcher:
            yield from self._crawl(fetcher, urls, origin=urls[0] if urls else "", failures=[])

    # ------------------------------------------------------------------ sitemaps

    def _sitemap_urls(self, fetched: Fetched, kind: str) -> tuple[str, tuple[str, ...]]:
        data = fetched.body
        if kind == "gzip":
            limit = self.config.max_response_bytes
            out = bytearray()
            for piece in decode_stream([data], ["gzip"]):
                out += piece
                if len(out) > limit:
                    raise WebLoaderError(f"decompressed sitemap is over max_response_bytes ({limit})", source=fetched.url)
            data = bytes(out)
        sitemap = parse_sitemap(data, fetched.url, max_urls=self.config.max_sitemap_urls)
        return sitemap.kind, sitemap.urls

    def _load_sitemap(self, fetcher: Fetcher, fetched: Fetched, kind: str) -> Iterator[Document]:
        root_kind, urls = self._sitemap_urls(fetched, kind)
        failures: list[tuple[str, RagloomError]] = []
        if root_kind == "sitemapindex":
            pages: list[str] = []
            for child_url in urls:
                try:
                    child = fetcher.fetch(child_url)
                    child_kind, child_urls = self._sitemap_urls(child, kind_of(child))
                    if child_kind != "urlset":
                        raise WebLoaderError("a sitemap index inside a sitemap index is not followed", source=child.url)
                except RagloomError as exc:
                    failures.append((child_url, exc))
                    continue
                pages.extend(child_urls)
                if len(pages) > self.config.max_sitemap_urls:
                    raise WebLoaderError(f"the sitemaps list more than {self.config.max_sitemap_urls} URLs (max_sitemap_urls)", source=fetched.url)
            urls = tuple(dict.fromkeys(pages))
        yield from self._crawl(fetcher, list(urls), origin=fetched.url, failures=failures)

    # ------------------------------------------------------------------ many pages

    def _page(self, fetcher: Fetcher, url: str) -> Document:
        fetched = fetcher.fetch(url)
        kind = kind_of(fetched)
        if kind in ("xml", "gzip"):
            raise WebLoaderError("a sitemap listed as a page is not followed", source=fetched.url)
        return to_document(fetched, kind, self.config)

    def _fetch_all(self, fetcher: Fetcher, urls: list[str]) -> Iterator[tuple[str, Document | RagloomError]]:
        """``(url, document or error)`` in the order of ``urls``, fetched by a bounded pool of threads."""

        def one(url: str) -> Document | RagloomError:
            try:
                return self._page(fetcher, url)
            except RagloomError as exc:
                return exc
            except Exception as exc:  # noqa: BLE001 - a page's unexpected failure must not lose the others
                return WebLoaderError(f"unexpected {type(exc).__name__}: {exc}", source=url)

        window: deque[tuple[str, Future[Document | RagloomError]]] = deque()
        pending = iter(urls)
        pool = ThreadPoolExecutor(max_workers=self.config.max_concurrency, thread_name_prefix="ragloom-web")
        try:
            for url in pending:
                # each page in a copy of this context: on the async path the worker sends on the caller's loop
                window.append((url, pool.submit(contextvars.copy_context().run, one, url)))
                if len(window) >= self.config.max_concurrency * 2:
                    done_url, future = window.popleft()
                    yield done_url, future.result()
            while window:
                done_url, future = window.popleft()
                yield done_url, future.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _crawl(self, fetcher: Fetcher, urls: list[str], *, origin: str, failures: list[tuple[str, RagloomError]]) -> Iterator[Document]:
        seen: set[str] = set()
        for url, outcome in self._fetch_all(fetcher, urls):
            if isinstance(outcome, Document):
                if outcome.source not in seen:  # two URLs redirecting to one page give one document
                    seen.add(outcome.source)
                    yield outcome
            else:
                failures.append((url, outcome))
        if not failures:
            return
        if self.config.on_url_error == "skip":
            for url, error in failures:
                logger.warning("skipped %s: %s", url, getattr(error, "reason", error))
            return
        listed = "; ".join(f"{url}: {type(error).__name__}: {getattr(error, 'reason', error)}" for url, error in failures[:20])
        more = f"; … and {len(failures) - 20} more" if len(failures) > 20 else ""
        total = len(urls) + sum(1 for url, _ in failures if url not in urls)
        error = WebLoaderError(f"{len(failures)} of {total} URLs failed (the others were loaded): {listed}{more}", source=origin)
        error.failures = tuple(failures)  # type: ignore[attr-defined]
        raise error

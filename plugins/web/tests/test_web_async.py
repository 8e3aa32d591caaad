"""The async path: under ``aingest`` every request goes out on the caller's event loop, with the same guard and limits.

A fault injector makes the blocking ``httpx.Client.send`` raise in every test
here, so a request that does not go through the loop's ``httpx.AsyncClient``
fails the test.
"""

from __future__ import annotations

import asyncio
import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest
from web_servers import CountingResolver, LocalServer, make_loader

from ragloom import BlockedAddressError, Pipeline, ResponseTooLargeError, WebLoaderError
from ragloom.aio import run_blocking
from ragloom_web import WebLoader

PAGE = "<html><head><title>T</title></head><body><main><p>local page</p></main></body></html>"


@pytest.fixture(autouse=True)
def no_blocking_sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """URLs someone tried to send with the blocking client (refused)."""
    tried: list[str] = []

    def refuse(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        tried.append(str(request.url))
        raise AssertionError(f"blocking client used on the async path for {request.url}")

    monkeypatch.setattr(httpx.Client, "send", refuse)
    return tried


def load_on_loop(loader: WebLoader, url: str) -> tuple[list[Any], list[str]]:
    """``loader.load(url)`` as the async path runs it; also the names of the threads that sent requests."""
    sent_from: list[str] = []
    original = httpx.AsyncClient.send

    async def send(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        sent_from.append(threading.current_thread().name)
        return await original(self, request, **kwargs)

    async def main() -> list[Any]:
        try:
            return await run_blocking(lambda: list(loader.load(url)))
        finally:
            await loader.aclose()

    httpx.AsyncClient.send = send  # type: ignore[method-assign]
    try:
        return asyncio.run(main()), sent_from
    finally:
        httpx.AsyncClient.send = original  # type: ignore[method-assign]


def test_aingest_fetches_a_sitemap_on_the_event_loop(server: LocalServer) -> None:
    pages = [f"/p{i}" for i in range(6)]
    for i, path in enumerate(pages):
        server.route(path, f"<title>Page {i}</title><p>lamp fact number {i}</p>")
    urls = "".join(f"<url><loc>{server.url(path)}</loc></url>" for path in pages)
    server.route("/sitemap.xml", f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>', content_type="application/xml")
    pipeline = Pipeline.builder().loader("web", allow_private_network=True, politeness_delay=0.0, max_concurrency=3).build()

    async def main() -> Any:
        try:
            return await pipeline.aingest(server.url("/sitemap.xml"))
        finally:
            await pipeline.aclose()

    result = asyncio.run(main())
    assert result.documents == 6
    assert result.failed == ()
    assert sorted(pipeline.sources()) == sorted(server.url(path) for path in pages)
    assert sorted(set(server.paths())) == sorted(["/robots.txt", "/sitemap.xml", *pages])


def test_requests_run_on_the_loop_thread_not_in_workers(server: LocalServer) -> None:
    server.route("/page", PAGE)
    loader = make_loader(allow_private_network=True)
    [document], threads = load_on_loop(loader, server.url("/page"))
    assert document.text == "local page"
    assert threads == ["MainThread", "MainThread"]  # robots.txt, then the page: both sent by the loop
    assert loader.async_clients._clients == {}  # closed by aclose


def test_a_redirect_to_a_private_address_is_refused_on_the_async_path(server: LocalServer) -> None:
    inner = LocalServer("127.0.0.2")
    try:
        inner.route("/admin", "<p>admin</p>")
        server.route("/go", "", status=302, headers={"Location": inner.url("/admin")})
        with pytest.raises(BlockedAddressError, match="redirect to http://127.0.0.2"):
            load_on_loop(make_loader(allowed_networks=["127.0.0.1/32"]), server.url("/go"))
        assert inner.requests == []
    finally:
        inner.close()


def test_dns_is_resolved_once_and_checked_on_the_async_path(server: LocalServer) -> None:
    server.route("/page", PAGE)
    secret = LocalServer("127.0.0.2", server.port)
    try:
        secret.route("/page", "<p>SECRET</p>")
        resolver = CountingResolver({"rebind.example": [["127.0.0.1"], ["127.0.0.2"]]})
        loader = make_loader(resolver, allowed_networks=["127.0.0.1/32"], respect_robots=False)
        [document], _ = load_on_loop(loader, server.url("/page", host="rebind.example"))
        assert document.text == "local page"
        assert resolver.lookups == ["rebind.example"]
        with pytest.raises(BlockedAddressError, match="127.0.0.2"):
            load_on_loop(loader, server.url("/page", host="rebind.example"))
        assert secret.requests == []
    finally:
        secret.close()


def test_total_timeout_stops_a_drip_before_the_headers_on_the_async_path(server: LocalServer) -> None:
    def drip(request: BaseHTTPRequestHandler) -> None:
        for byte in b"HTTP/1.0 200 OK\r\n" * 20:
            request.wfile.write(bytes([byte]))
            request.wfile.flush()
            time.sleep(0.02)

    server.route("/page", drip)
    started = time.monotonic()
    with pytest.raises(WebLoaderError, match="total_timeout of 1.0s exceeded before the response headers arrived"):
        load_on_loop(make_loader(allow_private_network=True, total_timeout=1.0, read_timeout=5.0, retries=0, respect_robots=False), server.url("/page"))
    assert time.monotonic() - started < 3.0


def test_total_timeout_stops_a_slow_body_on_the_async_path(server: LocalServer) -> None:
    def drip(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.end_headers()
        for _ in range(100):
            request.wfile.write(b"z")
            request.wfile.flush()
            time.sleep(0.05)

    server.route("/drip", drip)
    started = time.monotonic()
    with pytest.raises(WebLoaderError, match="total_timeout"):
        load_on_loop(make_loader(allow_private_network=True, read_timeout=2.0, total_timeout=0.5, retries=0, respect_robots=False), server.url("/drip"))
    assert time.monotonic() - started < 3.0


def test_a_gzip_bomb_is_cut_at_max_response_bytes_on_the_async_path(server: LocalServer) -> None:
    bomb = gzip.compress(b"a" * 20_000_000)
    server.route("/bomb", bomb, content_type="text/plain", headers={"Content-Encoding": "gzip"})
    loader = make_loader(allow_private_network=True, max_response_bytes=100_000, on_too_large="fail", respect_robots=False)
    with pytest.raises(ResponseTooLargeError, match="max_response_bytes"):
        load_on_loop(loader, server.url("/bomb"))


def test_a_declared_oversized_body_is_refused_before_reading_on_the_async_path(server: LocalServer) -> None:
    server.route("/big", b"x" * 300_000, content_type="text/plain")
    loader = make_loader(allow_private_network=True, max_response_bytes=100_000, on_too_large="fail", respect_robots=False)
    with pytest.raises(ResponseTooLargeError, match="Content-Length 300000"):
        load_on_loop(loader, server.url("/big"))
    truncating = make_loader(allow_private_network=True, max_response_bytes=100_000, on_too_large="truncate", respect_robots=False)
    [document], _ = load_on_loop(truncating, server.url("/big"))
    assert len(document.text) == 100_000


def test_a_body_that_stops_is_a_read_timeout_or_the_total_timeout_on_the_async_path(server: LocalServer) -> None:
    """A body that stops arriving: read_timeout names the body (not the headers); a total_timeout shorter than
    read_timeout ends the wait at the total deadline, not at read_timeout."""

    def stall(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.send_header("Content-Length", "1000")
        request.end_headers()
        request.wfile.write(b"z")
        request.wfile.flush()
        time.sleep(6.0)

    server.route("/stall", stall)
    with pytest.raises(WebLoaderError, match=r"timed out reading the body \(ReadTimeout\)"):
        load_on_loop(make_loader(allow_private_network=True, read_timeout=0.5, total_timeout=30.0, retries=0, respect_robots=False), server.url("/stall"))
    started = time.monotonic()
    with pytest.raises(WebLoaderError, match="total_timeout of 1.0s exceeded while reading the body"):
        load_on_loop(make_loader(allow_private_network=True, read_timeout=5.0, total_timeout=1.0, retries=0, respect_robots=False), server.url("/stall"))
    assert time.monotonic() - started < 4.0


def test_a_body_of_exactly_max_response_bytes_is_read_whole_on_the_async_path(server: LocalServer) -> None:
    """The limit is inclusive: Content-Length == max_response_bytes passes the early check and the raw budget."""
    server.route("/exact", b"x" * 1_000_000, content_type="text/plain")
    loader = make_loader(allow_private_network=True, max_response_bytes=1_000_000, on_too_large="fail", respect_robots=False)
    [document], _ = load_on_loop(loader, server.url("/exact"))
    assert len(document.text) == 1_000_000

"""The whole-URL deadline while fetch.py reads a body, against a real local server, without a bound on seconds.

A chunked body whose trailer drips for far longer than ``total_timeout`` (one byte each 20 ms: no read ever waits
long enough for the per-read timeout, and a trailer carries no body bytes) ends in the deadline's own error, on the
async path too (where each body read runs on the caller's event loop); without the deadline on those reads the drip
would finish and the page would load. A reader that stalls past the deadline before taking the first body bytes
(already received with the headers, so no socket read can be cut) gets the same error from the check of each piece.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator, Iterable
from http.server import BaseHTTPRequestHandler

import pytest
from web_servers import LocalServer, load_all, make_loader

import ragloom_web.fetch
from ragloom.aio import run_blocking
from ragloom.errors import WebLoaderError
from ragloom_web.decoding import decode_stream

#: a chunked response whose body bytes come at once and whose trailer then takes about eight seconds, 20 ms a byte
HEAD_AND_BODY = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n"
)
TRAILER = b"X-Slow: " + b"a" * 380 + b"\r\n\r\n"
TIMED_OUT = "timed out: total_timeout of 0.5s exceeded while reading the body"


def _trailer_drip(request: BaseHTTPRequestHandler) -> None:
    request.wfile.write(HEAD_AND_BODY)
    request.wfile.flush()
    for byte in TRAILER:
        time.sleep(0.02)
        request.wfile.write(bytes([byte]))
        request.wfile.flush()


def _loader():  # type: ignore[no-untyped-def]
    return make_loader(allow_private_network=True, total_timeout=0.5, read_timeout=5.0, retries=0, respect_robots=False)


def test_a_trailer_dripping_past_total_timeout_ends_in_its_error_on_the_async_path(server: LocalServer) -> None:
    server.route("/drip", _trailer_drip)
    loader = _loader()

    async def main() -> list[object]:
        try:
            return await run_blocking(lambda: list(loader.load(server.url("/drip"))))
        finally:
            await loader.aclose()

    with pytest.raises(WebLoaderError) as caught:
        asyncio.run(main())
    assert caught.value.reason == TIMED_OUT


def test_a_trailer_dripping_past_total_timeout_ends_in_its_error(server: LocalServer) -> None:
    server.route("/drip", _trailer_drip)
    with pytest.raises(WebLoaderError) as caught:
        load_all(_loader(), server.url("/drip"))
    assert caught.value.reason == TIMED_OUT


def _in_one_write(request: BaseHTTPRequestHandler) -> None:
    request.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: 14\r\n\r\n<p>on time</p>")


def _stalled_reader(seconds: float):  # type: ignore[no-untyped-def]
    """decode_stream whose caller stalls ``seconds`` before it takes the first piece (a fault: a descheduled reader)."""

    def stalled(chunks: Iterable[bytes], codings: list[str]) -> Generator[bytes, None, None]:
        time.sleep(seconds)
        yield from decode_stream(chunks, codings)

    return stalled


def test_a_body_read_after_total_timeout_from_received_bytes_ends_in_its_error(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The response comes in one write, so its body bytes arrive with the headers; the reader stalls past the
    deadline, then takes them without a socket read: the check of each piece against the deadline refuses them."""
    server.route("/page", _in_one_write)
    monkeypatch.setattr(ragloom_web.fetch, "decode_stream", _stalled_reader(1.0))
    with pytest.raises(WebLoaderError) as caught:
        load_all(_loader(), server.url("/page"))
    assert caught.value.reason == TIMED_OUT

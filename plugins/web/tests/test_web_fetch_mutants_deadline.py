"""The whole-URL deadline of fetch.py on the synchronous path, against a real local server, without a bound on
seconds: headers that drip for far longer than ``total_timeout`` end in the deadline's own error, whatever the
machine's load (a fetch without the deadline would finish the drip and succeed)."""

from __future__ import annotations

import asyncio
import time
from http.server import BaseHTTPRequestHandler

import pytest
from web_servers import LocalServer, load_all, make_loader

from ragloom.aio import run_blocking
from ragloom.errors import WebLoaderError

#: a complete response whose headers take about eight seconds to arrive, one byte each 20 ms
HEAD = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n" + b"X-Slow: " + b"a" * 360 + b"\r\n\r\n"


def _drip(request: BaseHTTPRequestHandler) -> None:
    for byte in HEAD:
        request.wfile.write(bytes([byte]))
        request.wfile.flush()
        time.sleep(0.02)
    request.wfile.write(b"dripped")


def test_headers_dripping_past_total_timeout_end_in_its_error(server: LocalServer) -> None:
    server.route("/drip", _drip)
    loader = make_loader(allow_private_network=True, total_timeout=0.5, read_timeout=5.0, retries=0, respect_robots=False)
    with pytest.raises(WebLoaderError) as caught:
        load_all(loader, server.url("/drip"))
    assert caught.value.reason == "timed out: total_timeout of 0.5s exceeded before the response headers arrived"


def test_headers_dripping_past_total_timeout_end_in_its_error_on_the_async_path(server: LocalServer) -> None:
    server.route("/drip", _drip)
    loader = make_loader(allow_private_network=True, total_timeout=0.5, read_timeout=5.0, retries=0, respect_robots=False)

    async def main() -> list[object]:
        try:
            return await run_blocking(lambda: list(loader.load(server.url("/drip"))))
        finally:
            await loader.aclose()

    with pytest.raises(WebLoaderError) as caught:
        asyncio.run(main())
    assert caught.value.reason == "timed out: total_timeout of 0.5s exceeded before the response headers arrived"

"""Responses from a real local server: content types, charsets, compression bombs, limits, timeouts, retries."""

from __future__ import annotations

import gzip
import json
import socket
import time
import tracemalloc
import zlib
from http.server import BaseHTTPRequestHandler

import brotli
import pytest
from web_servers import LocalServer, load_all, make_loader, slow

from ragloom.errors import ResponseTooLargeError, WebLoaderError
from ragloom.loaders.html import extract_html

LIMIT = 1_000_000
BOMB_SIZE = 200 * 1024 * 1024  # decoded size, 200x the limit


def _local(**options):  # type: ignore[no-untyped-def]
    return make_loader(allow_private_network=True, **options)


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"\0" * (1024 * 1024)
    parts = [compressor.compress(block) for _ in range(BOMB_SIZE // len(block))]
    return b"".join(parts) + compressor.flush()


@pytest.fixture(scope="module")
def br_bomb() -> bytes:
    compressor = brotli.Compressor(quality=5)
    block = b"\0" * (1024 * 1024)
    parts = [compressor.process(block) for _ in range(BOMB_SIZE // len(block))]
    return b"".join(parts) + compressor.finish()


def test_html_page_text_and_metadata(server: LocalServer) -> None:
    page = (
        '<html lang="en"><head><title>Lumen Lamp</title><meta name="description" content="A lamp.">'
        '<link rel="canonical" href="/lamp"></head><body><nav>menu</nav><main><h1>Lumen</h1><p>It <b>gl</b>ows.</p></main></body></html>'
    )
    server.route("/lamp?ref=1", page)
    [document] = load_all(_local(), server.url("/lamp?ref=1#section"))
    assert document.source == server.url("/lamp?ref=1")
    assert document.text == extract_html(page).text  # the HTML file loader's extraction, shared
    assert "It glows." in document.text
    metadata = document.metadata
    assert metadata["title"] == "Lumen Lamp"
    assert metadata["url"] == server.url("/lamp?ref=1")
    assert metadata["status"] == 200
    assert metadata["content_type"] == "text/html"
    assert metadata["description"] == "A lamp."
    assert metadata["lang"] == "en"
    assert metadata["canonical_url"] == server.url("/lamp")
    assert metadata["fetched_at"].endswith("+00:00")
    assert "truncated" not in metadata


def test_selector_keeps_only_matching_content(server: LocalServer) -> None:
    server.route("/page", "<body><nav>menu</nav><article><p>body text</p></article><footer>foot</footer></body>")
    [document] = load_all(_local(selector="article"), server.url("/page"))
    assert document.text == "body text"


def test_plain_text_and_json_pages(server: LocalServer) -> None:
    server.route("/notes.txt", "line one\nline two", content_type="text/plain; charset=utf-8")
    server.route("/api", json.dumps({"name": "Lumen", "watts": 7}), content_type="application/json")
    server.route("/bad.json", "{not json", content_type="application/json")
    [text] = load_all(_local(), server.url("/notes.txt"))
    assert text.text == "line one\nline two"
    assert text.metadata["content_type"] == "text/plain"
    [data] = load_all(_local(), server.url("/api"))
    assert json.loads(data.text) == {"name": "Lumen", "watts": 7}
    with pytest.raises(WebLoaderError, match="invalid JSON"):
        load_all(_local(), server.url("/bad.json"))


@pytest.mark.parametrize("content_type", ["image/png", "application/pdf", "application/octet-stream", "video/mp4"])
def test_non_text_content_types_are_refused(server: LocalServer, content_type: str) -> None:
    server.route("/file", b"\x89PNG\r\n\x1a\n\0\0\0", content_type=content_type)
    with pytest.raises(WebLoaderError, match=f"unsupported content type '{content_type}'"):
        load_all(_local(), server.url("/file"))


def test_http_errors_name_the_status(server: LocalServer) -> None:
    with pytest.raises(WebLoaderError, match="HTTP 404") as caught:
        load_all(_local(), server.url("/missing"))
    assert caught.value.source == server.url("/missing")
    assert server.paths().count("/missing") == 1  # a 404 is not retried


def test_charset_from_the_header(server: LocalServer) -> None:
    server.route("/latin", "<p>Café crème, naïve</p>".encode("iso-8859-1"), content_type="text/html; charset=ISO-8859-1")
    [document] = load_all(_local(), server.url("/latin"))
    assert document.text == "Café crème, naïve"


def test_iso_8859_1_from_meta(server: LocalServer) -> None:
    body = '<html><head><meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1"></head><body><p>Größe: groß, Ærø</p></body></html>'
    server.route("/latin-meta", body.encode("iso-8859-1"), content_type="text/html")
    [document] = load_all(_local(), server.url("/latin-meta"))
    assert document.text == "Größe: groß, Ærø"


def test_shift_jis_from_meta(server: LocalServer) -> None:
    body = '<html><head><meta charset="Shift_JIS"><title>ランプ</title></head><body><p>日本語のページです。ルーメンランプ。</p></body></html>'
    server.route("/sjis", body.encode("shift_jis"), content_type="text/html")
    [document] = load_all(_local(), server.url("/sjis"))
    assert document.text == "日本語のページです。ルーメンランプ。"
    assert document.metadata["title"] == "ランプ"


def test_charset_detected_when_nothing_declares_it(server: LocalServer) -> None:
    text = "Привет, мир! Это страница на русском языке о лампе Люмен. " * 20
    server.route("/ru", text.encode("cp1251"), content_type="text/plain")
    [document] = load_all(_local(), server.url("/ru"))
    assert document.text == text


@pytest.mark.parametrize("coding", ["gzip", "deflate", "deflate-raw", "br"])
def test_compressed_bodies_are_decoded(server: LocalServer, coding: str) -> None:
    page = ("<p>" + "Lumen lamp glows softly. " * 500 + "</p>").encode()
    if coding == "gzip":
        body = gzip.compress(page)
    elif coding == "deflate":
        body = zlib.compress(page)
    elif coding == "deflate-raw":
        compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
        body = compressor.compress(page) + compressor.flush()
    else:
        body = brotli.compress(page)
    server.route("/page", body, headers={"Content-Encoding": coding.replace("-raw", "")})
    [document] = load_all(_local(), server.url("/page"))
    assert document.text == ("Lumen lamp glows softly. " * 500).strip()
    assert "gzip" in server.requests[-1].headers["accept-encoding"]
    assert "br" in server.requests[-1].headers["accept-encoding"]


@pytest.mark.parametrize("bomb", ["gzip_bomb", "br_bomb"])
def test_compression_bombs_stop_at_the_limit_with_bounded_memory(server: LocalServer, bomb: str, request: pytest.FixtureRequest) -> None:
    body = request.getfixturevalue(bomb)
    assert len(body) < LIMIT  # the compressed body alone is under the limit
    server.route("/bomb", body, content_type="text/plain", headers={"Content-Encoding": "gzip" if bomb == "gzip_bomb" else "br"})
    tracemalloc.start()
    try:
        with pytest.raises(ResponseTooLargeError, match="decoded body is over max_response_bytes"):
            load_all(_local(max_response_bytes=LIMIT), server.url("/bomb"))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * LIMIT  # the decoded size is 200x the limit


def test_truncate_mode_keeps_the_first_part_and_marks_it(server: LocalServer, gzip_bomb: bytes) -> None:
    server.route("/bomb", gzip_bomb, content_type="text/plain; charset=utf-8", headers={"Content-Encoding": "gzip"})
    server.route("/long", "é" * 800, content_type="text/plain; charset=utf-8")  # 1600 bytes, the limit cuts a character
    tracemalloc.start()
    try:
        [document] = load_all(_local(max_response_bytes=LIMIT, on_too_large="truncate"), server.url("/bomb"))
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert document.metadata["truncated"] is True
    assert len(document.text) == LIMIT
    assert peak < 12 * LIMIT
    [cut] = load_all(_local(max_response_bytes=1001, on_too_large="truncate"), server.url("/long"))
    assert cut.text == "é" * 500
    assert cut.metadata["truncated"] is True


def test_a_declared_length_over_the_limit_fails_early(server: LocalServer) -> None:
    server.route("/big", b"x" * 5000, content_type="text/plain")
    with pytest.raises(ResponseTooLargeError, match="Content-Length 5000"):
        load_all(_local(max_response_bytes=1000), server.url("/big"))


def test_an_undeclared_body_over_the_limit_fails(server: LocalServer) -> None:
    def endless(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.end_headers()
        for _ in range(200):  # 12.8 MB at most, no Content-Length
            request.wfile.write(b"y" * 65536)

    server.route("/endless", endless)
    with pytest.raises(ResponseTooLargeError):
        load_all(_local(max_response_bytes=200_000), server.url("/endless"))


def test_corrupt_compressed_body_is_a_clear_error(server: LocalServer) -> None:
    server.route("/corrupt", b"this is not gzip at all", headers={"Content-Encoding": "gzip"})
    server.route("/zstd", b"....", headers={"Content-Encoding": "zstd"})
    with pytest.raises(WebLoaderError, match="corrupt compressed body"):
        load_all(_local(), server.url("/corrupt"))
    with pytest.raises(WebLoaderError, match="unsupported Content-Encoding 'zstd'"):
        load_all(_local(), server.url("/zstd"))


def test_read_timeout(server: LocalServer) -> None:
    server.route("/slow", slow(3.0))
    with pytest.raises(WebLoaderError, match="timed out"):
        load_all(_local(read_timeout=0.2, retries=0), server.url("/slow"))


def test_connect_timeout() -> None:
    """A listener whose accept queue is full drops new connection attempts: connecting times out."""
    listener = socket.socket()
    fillers = []
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        with pytest.raises(WebLoaderError, match="timed out \\(ConnectTimeout\\)"):
            load_all(_local(connect_timeout=0.3, retries=0, respect_robots=False), f"http://127.0.0.1:{port}/")
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_total_timeout_stops_a_slow_drip(server: LocalServer) -> None:
    def drip(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.end_headers()
        for _ in range(100):  # one byte every 50 ms: never a read timeout, 5 s in all
            request.wfile.write(b"z")
            request.wfile.flush()
            time.sleep(0.05)

    server.route("/drip", drip)
    with pytest.raises(WebLoaderError, match="total_timeout"):
        load_all(_local(read_timeout=2.0, total_timeout=0.5, retries=0), server.url("/drip"))


def test_connect_failures_are_retried_then_reported(server: LocalServer) -> None:
    port = server.port
    server.close()  # nothing listens there any more
    with pytest.raises(WebLoaderError, match="connection failed"):
        load_all(_local(retries=2, respect_robots=False), f"http://127.0.0.1:{port}/page")


def test_retries_honour_retry_after_then_succeed(server: LocalServer) -> None:
    answers = iter([(503, {"Retry-After": "0"}), (429, {"Retry-After": "0"}), (200, {})])

    def flaky(request: BaseHTTPRequestHandler) -> None:
        status, headers = next(answers)
        body = b"<p>finally</p>"
        request.send_response(status)
        for name, value in {**headers, "Content-Type": "text/html", "Content-Length": str(len(body))}.items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(body)

    server.route("/flaky", flaky)
    [document] = load_all(_local(retries=2), server.url("/flaky"))
    assert document.text == "finally"
    assert server.paths().count("/flaky") == 3


def test_a_retry_after_longer_than_max_retry_wait_is_not_waited_for(server: LocalServer) -> None:
    server.route("/busy", "busy", status=503, headers={"Retry-After": "3600"})
    with pytest.raises(WebLoaderError, match="over max_retry_wait"):
        load_all(_local(retries=3, max_retry_wait=5.0), server.url("/busy"))
    assert server.paths().count("/busy") == 1


def test_custom_headers_and_user_agent_are_sent(server: LocalServer) -> None:
    server.route("/page", "<p>x</p>")
    load_all(_local(user_agent="LumenBot/2.0", headers={"X-Team": "docs", "Accept-Language": "de"}), server.url("/page"))
    headers = server.requests[-1].headers
    assert headers["user-agent"] == "LumenBot/2.0"
    assert headers["x-team"] == "docs"
    assert headers["accept-language"] == "de"


def test_only_retryable_statuses_are_retried(server: LocalServer) -> None:
    server.route("/broken", "oops", status=500, content_type="text/plain")
    server.route("/unimplemented", "no", status=501, content_type="text/plain")
    with pytest.raises(WebLoaderError, match="HTTP 500"):
        load_all(_local(retries=2), server.url("/broken"))
    with pytest.raises(WebLoaderError, match="HTTP 501"):
        load_all(_local(retries=2), server.url("/unimplemented"))
    assert server.paths().count("/broken") == 3
    assert server.paths().count("/unimplemented") == 1

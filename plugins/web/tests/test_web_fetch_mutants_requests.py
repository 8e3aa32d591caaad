"""One request of fetch.py, against a real local server, without bounds on seconds: the headers it sends, its
retries (backoff, ``max_retry_wait``, the time left), the timeouts it gives httpx, the status it reports."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest
from web_servers import LocalServer, load_all, make_loader

from ragloom.aio import run_blocking
from ragloom.errors import ResponseTooLargeError, WebLoaderError
from ragloom.plugin import Secret
from ragloom_web.config import DEFAULT_USER_AGENT
from ragloom_web.decoding import ACCEPT_ENCODING
from ragloom_web.fetch import ACCEPT


def _local(**options):  # type: ignore[no-untyped-def]
    return make_loader(allow_private_network=True, **options)


def _site(server: LocalServer) -> str:
    return server.url("/").rstrip("/")


def _answers(statuses: Iterator[tuple[int, dict[str, str]]]):  # type: ignore[no-untyped-def]
    """A handler answering each request with the next ``(status, headers)``."""

    def handler(request: BaseHTTPRequestHandler) -> None:
        status, headers = next(statuses)
        body = b"<p>finally</p>"
        request.send_response(status)
        for name, value in {**headers, "Content-Type": "text/html", "Content-Length": str(len(body))}.items():
            request.send_header(name, value)
        request.end_headers()
        request.wfile.write(body)

    return handler


def _recording(seen: list[dict[str, list[str]]]):  # type: ignore[no-untyped-def]
    """A handler keeping every value of every header (a dict of one value each would hide a header sent twice)."""

    def handler(request: BaseHTTPRequestHandler) -> None:
        values: dict[str, list[str]] = {}
        for name, value in request.headers.items():
            values.setdefault(name.lower(), []).append(value)
        seen.append(values)
        body = b"<p>seen</p>"
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.send_header("Content-Length", str(len(body)))
        request.end_headers()
        request.wfile.write(body)

    return handler


# ---------------------------------------------------------------- headers


def test_the_default_headers_are_sent_once_each(server: LocalServer) -> None:
    seen: list[dict[str, list[str]]] = []
    server.route("/page", _recording(seen))
    load_all(_local(respect_robots=False), server.url("/page"))
    [headers] = seen
    assert sorted(headers) == ["accept", "accept-encoding", "connection", "host", "user-agent"]  # nothing else
    assert headers["user-agent"] == [DEFAULT_USER_AGENT]
    assert headers["accept"] == [ACCEPT]
    assert headers["accept-encoding"] == [ACCEPT_ENCODING]


def test_a_header_option_replaces_the_default_in_any_letter_case(server: LocalServer) -> None:
    # found by mutation testing: a name in another letter case was sent beside the default, not instead of it
    seen: list[dict[str, list[str]]] = []
    server.route("/page", _recording(seen))
    load_all(_local(respect_robots=False, headers={"accept": "application/json", "USER-AGENT": "LumenBot/3"}), server.url("/page"))
    load_all(_local(respect_robots=False, headers={"Accept": "text/plain"}), server.url("/page"))
    assert [(h["accept"], h["user-agent"]) for h in seen] == [(["application/json"], ["LumenBot/3"]), (["text/plain"], [DEFAULT_USER_AGENT])]


def test_a_secret_header_replaces_a_plain_one_of_the_same_name(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_TEST_TOKEN", "s3cret")
    seen: list[dict[str, list[str]]] = []
    server.route("/page", _recording(seen))
    loader = _local(respect_robots=False, headers={"authorization": "public"}, secret_headers={"Authorization": Secret("RAGLOOM_TEST_TOKEN")})
    load_all(loader, server.url("/page"))
    assert seen[0]["authorization"] == ["s3cret"]


# ---------------------------------------------------------------- retries


def test_the_backoff_doubles_until_a_wait_is_over_max_retry_wait(server: LocalServer) -> None:
    # waits of 5, 10, 20 ms are taken; the fourth, 40 ms, is over 35 ms: four requests in all
    server.route("/busy", "busy", status=503, content_type="text/plain")
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(retries=6, backoff=0.005, max_retry_wait=0.035, respect_robots=False), server.url("/busy"))
    assert caught.value.reason == "HTTP 503; Retry-After asks for 0s, over max_retry_wait"
    assert server.paths().count("/busy") == 4


def test_a_wait_of_exactly_max_retry_wait_is_waited(server: LocalServer) -> None:
    server.route("/flaky", _answers(iter([(503, {}), (503, {}), (200, {})])))
    [document] = load_all(_local(retries=2, backoff=0.0, max_retry_wait=0.0, respect_robots=False), server.url("/flaky"))
    assert document.text == "finally"
    assert server.paths().count("/flaky") == 3


def test_a_retry_after_over_max_retry_wait_is_named_with_the_status(server: LocalServer) -> None:
    server.route("/busy", "busy", status=503, headers={"Retry-After": "3600"})
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(retries=3, max_retry_wait=5.0, respect_robots=False), server.url("/busy"))
    assert caught.value.reason == "HTTP 503; Retry-After asks for 3600s, over max_retry_wait"


def test_a_retry_after_past_the_time_left_is_not_waited_for(server: LocalServer) -> None:
    server.route("/flaky", _answers(iter([(503, {"Retry-After": "3"}), (200, {})])))
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(retries=2, max_retry_wait=10.0, total_timeout=2.0, respect_robots=False), server.url("/flaky"))
    assert caught.value.reason == "HTTP 503; no time left to retry within total_timeout"
    assert server.paths().count("/flaky") == 1


def test_exhausted_retries_report_the_last_status(server: LocalServer) -> None:
    server.route("/busy", "busy", status=503, content_type="text/plain")
    url = server.url("/busy")
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(retries=1, respect_robots=False), url)
    assert type(caught.value) is WebLoaderError
    assert (caught.value.reason, caught.value.source, caught.value.status_code) == ("HTTP 503", url, 503)  # type: ignore[attr-defined]
    assert server.paths().count("/busy") == 2


def test_a_success_is_requested_once(server: LocalServer) -> None:
    server.route("/page", "<p>page</p>")
    load_all(_local(retries=3, respect_robots=False), server.url("/page"))
    assert server.paths() == ["/page"]


def test_requests_are_throttled_per_site(server: LocalServer) -> None:
    server.route("/page", "<p>page</p>")
    loader = _local()
    load_all(loader, server.url("/page"))
    assert set(loader.throttle._slots) == set(loader.throttle._next_start) == {_site(server)}


# ---------------------------------------------------------------- timeouts


def test_the_timeouts_given_to_httpx_are_the_options_capped_at_the_time_left() -> None:
    loader = make_loader(connect_timeout=5.0, read_timeout=7.0, total_timeout=20.0)
    with loader.fetcher() as fetcher:
        roomy = fetcher._timeout(time.monotonic() + 1000.0)
        assert (roomy.connect, roomy.read, roomy.write) == (5.0, 7.0, 7.0)
        assert 7.0 < roomy.pool <= 1000.0
        short = fetcher._timeout(time.monotonic() + 0.5)
        assert short.connect == short.read == short.write == short.pool
        assert 0.0 < short.pool <= 0.5
        with pytest.raises(WebLoaderError) as caught:
            fetcher._timeout(time.monotonic() - 1.0)
        assert caught.value.reason == "timed out: total_timeout of 20.0s exceeded"


# ---------------------------------------------------------------- statuses


def test_a_300_is_an_error_and_its_body_is_not_read(server: LocalServer) -> None:
    server.route("/choices", b"x" * 100, status=300, content_type="text/html")
    url = server.url("/choices")
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(max_response_bytes=10, on_too_large="fail", respect_robots=False), url)
    assert type(caught.value) is WebLoaderError and not isinstance(caught.value, ResponseTooLargeError)
    assert (caught.value.reason, caught.value.status_code) == ("HTTP 300", 300)  # type: ignore[attr-defined]


def test_an_error_status_after_a_redirect_names_where_it_was(server: LocalServer) -> None:
    server.route("/moved", "", status=301, headers={"Location": "/gone"})
    server.route("/gone", "gone", status=404, content_type="text/plain")
    url = server.url("/moved")
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(respect_robots=False), url)
    assert (caught.value.reason, caught.value.source) == (f"HTTP 404 (redirected to {server.url('/gone')})", url)
    with pytest.raises(WebLoaderError) as direct:
        load_all(_local(respect_robots=False), server.url("/gone"))
    assert (direct.value.reason, direct.value.status_code) == ("HTTP 404", 404)  # type: ignore[attr-defined]


def test_the_content_type_parameters_and_charset_are_read(server: LocalServer) -> None:
    server.route("/latin", "café".encode("latin-1"), content_type="Text/HTML; charset=ISO-8859-1; profile=x")
    [document] = load_all(_local(respect_robots=False), server.url("/latin"))
    assert document.text == "café"


def test_fetched_at_is_utc_to_the_second(server: LocalServer) -> None:
    server.route("/page", "<p>page</p>")
    [document] = load_all(_local(respect_robots=False), server.url("/page"))
    stamp = document.metadata["fetched_at"]
    assert stamp.endswith("+00:00") and len(stamp) == len("2026-01-01T00:00:00+00:00"), stamp


# ---------------------------------------------------------------- redirects and failures


def test_a_redirected_page_keeps_the_url_first_asked_for(server: LocalServer) -> None:
    server.route("/moved", "", status=302, headers={"Location": "/page"})
    server.route("/page", "<p>page</p>")
    [document] = load_all(_local(respect_robots=False), server.url("/moved"))
    assert (document.source, document.metadata["requested_url"]) == (server.url("/page"), server.url("/moved"))


def test_a_refused_redirect_names_where_it_came_from(server: LocalServer) -> None:
    server.route("/go", "", status=302, headers={"Location": "ftp://files.example/x"})
    url = server.url("/go")
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(respect_robots=False), url)
    assert caught.value.reason.startswith(f"redirect from {url} refused: "), caught.value.reason
    assert len(caught.value.reason) > len(f"redirect from {url} refused: ")


def test_a_refused_connection_is_a_failure_before_the_headers(server: LocalServer) -> None:
    port = server.port
    server.close()  # nothing listens there any more
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(retries=0, respect_robots=False), f"http://127.0.0.1:{port}/page")
    assert caught.value.reason.startswith("connection failed: "), caught.value.reason


def test_a_body_cut_short_is_a_failure_while_reading_the_body(server: LocalServer) -> None:
    def short(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.send_header("Content-Length", "1000")
        request.end_headers()
        request.wfile.write(b"<p>only this</p>")

    server.route("/short", short)
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(retries=0, respect_robots=False), server.url("/short"))
    assert caught.value.reason.startswith("connection failed while reading the body: "), caught.value.reason


def test_a_page_without_a_content_type_that_looks_like_html_is_read(server: LocalServer) -> None:
    server.route("/bare", "<!doctype html><p>bare</p>", content_type=None)
    [document] = load_all(_local(respect_robots=False), server.url("/bare"))
    assert document.text == "bare"


def test_a_body_over_max_response_bytes_fails_or_is_truncated_as_asked(server: LocalServer) -> None:
    server.route("/big", b"<p>" + b"x" * 100 + b"</p>", content_type="text/plain")
    url = server.url("/big")
    with pytest.raises(ResponseTooLargeError) as caught:
        load_all(_local(max_response_bytes=10, on_too_large="fail", respect_robots=False), url)
    assert caught.value.reason == "Content-Length 107 is over max_response_bytes (10)"
    [document] = load_all(_local(max_response_bytes=10, on_too_large="truncate", respect_robots=False), url)
    assert (document.text, document.metadata["truncated"]) == ("<p>xxxxxxx", True)


def test_a_body_that_stalls_past_read_timeout_is_a_read_timeout_of_the_body(server: LocalServer) -> None:
    def stall(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.send_header("Content-Length", str(len(b"<p>start, then end</p>")))
        request.end_headers()
        request.wfile.write(b"<p>start")
        request.wfile.flush()
        time.sleep(3)  # ten times read_timeout; without it (httpx's 5 s default or none) the page would arrive whole
        request.wfile.write(b", then end</p>")

    server.route("/stall", stall)
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(read_timeout=0.3, total_timeout=60.0, retries=0, respect_robots=False), server.url("/stall"))
    assert caught.value.reason == "timed out reading the body (ReadTimeout)"


def test_a_redirect_without_a_location_is_named(server: LocalServer) -> None:
    server.route("/nowhere", "", status=302)
    url = server.url("/nowhere")
    with pytest.raises(WebLoaderError) as caught:
        load_all(_local(respect_robots=False), url)
    assert (caught.value.reason, caught.value.source) == ("HTTP 302 redirect without a Location header", url)


def test_a_body_over_max_response_bytes_fails_or_is_truncated_as_asked_on_the_async_path(server: LocalServer) -> None:
    server.route("/big", b"<p>" + b"x" * 100 + b"</p>", content_type="text/plain")
    url = server.url("/big")

    def on_loop(loader):  # type: ignore[no-untyped-def]
        async def main() -> list[object]:
            try:
                return await run_blocking(lambda: list(loader.load(url)))
            finally:
                await loader.aclose()

        return asyncio.run(main())

    with pytest.raises(ResponseTooLargeError) as caught:
        on_loop(_local(max_response_bytes=10, on_too_large="fail", respect_robots=False))
    assert caught.value.reason == "Content-Length 107 is over max_response_bytes (10)"
    [document] = on_loop(_local(max_response_bytes=10, on_too_large="truncate", respect_robots=False))
    assert (document.text, document.metadata["truncated"]) == ("<p>xxxxxxx", True)

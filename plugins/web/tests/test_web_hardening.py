"""Attacks from the hardening review, against real local servers: hostile redirects, secret headers
across origins, blocked networks through IPv4-embedding IPv6, and byte-drip status lines and headers."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

import pytest
from web_servers import CountingResolver, LocalServer, load_all, make_loader

from ragloom import Pipeline
from ragloom.config import Secret
from ragloom.errors import BlockedAddressError, RobotsDisallowedError, WebLoaderError

PAGE = "<html><head><title>Local</title></head><body><p>local page</p></body></html>"


@pytest.mark.parametrize("location", ["data:text/plain,x", "http:\\\\host", "http:\\\\127.0.0.1/x", "javascript:alert(1)", "//[::1"])
def test_hostile_redirects_are_web_loader_errors(server: LocalServer, location: str) -> None:
    server.route("/go", "", status=302, headers={"Location": location})
    with pytest.raises(WebLoaderError, match="redirect|connection failed"):
        load_all(make_loader(allow_private_network=True, retries=0), server.url("/go"))
    assert server.paths() == ["/robots.txt", "/go"]


def test_a_hostile_redirect_is_one_failure_of_an_ingest(server: LocalServer) -> None:
    server.route("/go", "", status=302, headers={"Location": "data:text/plain,x"})
    server.route("/page", PAGE)
    pipeline = Pipeline.builder().loader("web", allow_private_network=True, politeness_delay=0.0).ingest_options(on_error="skip").build()
    result = pipeline.ingest([server.url("/go"), server.url("/page")])
    assert result.documents == 1
    assert [f.source for f in result.failed] == [server.url("/go")]


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> Secret:
    monkeypatch.setenv("RAGLOOM_TEST_TOKEN", "s3cret")
    return Secret("RAGLOOM_TEST_TOKEN")


def test_secrets_never_reach_another_site_nor_its_robots_txt(server: LocalServer, token: Secret) -> None:
    other = LocalServer("127.0.0.2")
    try:
        other.route("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
        other.route("/back", "", status=302, headers={"Location": server.url("/landing")})
        server.route("/tok", "", status=302, headers={"Location": other.url("/back")})
        server.route("/landing", PAGE)
        loader = make_loader(allow_private_network=True, secret_headers={"Authorization": token})
        [document] = load_all(loader, server.url("/tok"))
        assert document.text == "local page"
        seen = {(s.path, "authorization" in s.headers) for s in server.requests} | {("other" + s.path, "authorization" in s.headers) for s in other.requests}
        assert seen == {
            ("/robots.txt", True),  # the configured origin's own robots.txt
            ("/tok", True),
            ("other/robots.txt", False),  # another host's robots.txt
            ("other/back", False),
            ("/landing", False),  # back at the origin, but after a cross-origin hop
        }
    finally:
        other.close()


def test_robots_txt_of_another_site_fetched_first_gets_no_secret(server: LocalServer, token: Secret) -> None:
    other = LocalServer("127.0.0.2")
    try:
        other.route("/robots.txt", "", status=302, headers={"Location": server.url("/robots.txt")})
        other.route("/page", PAGE)
        server.route("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
        server.route("/tok", "", status=302, headers={"Location": other.url("/page")})
        load_all(make_loader(allow_private_network=True, secret_headers={"Authorization": token}), server.url("/tok"))
        # the origin's robots.txt was asked twice: with the secret for the origin, and without it via the other site's redirect
        assert sorted("authorization" in s.headers for s in server.requests if s.path == "/robots.txt") == [False, True]
        assert all("authorization" not in s.headers for s in other.requests)
    finally:
        other.close()


EMBEDDING_10_0_0_5 = [
    "[::ffff:10.0.0.5]",  # IPv4-mapped
    "[::10.0.0.5]",  # IPv4-compatible
    "[64:ff9b::a00:5]",  # NAT64 well-known prefix
    "[64:ff9b:1::a00:5]",  # local-use NAT64, /96 layout
    "[64:ff9b:1:a00:0:500::]",  # local-use NAT64, /48 layout (RFC 6052)
    "[2002:a00:5::1]",  # 6to4
    "[2001:0:4136:e378:8000:63bf:f5ff:fffa]",  # Teredo, client 10.0.0.5 (obfuscated)
]


@pytest.mark.parametrize("host", EMBEDDING_10_0_0_5)
def test_blocked_networks_hold_for_every_ipv6_form_of_an_ipv4_address(host: str, off_loopback_connections: list) -> None:
    loader = make_loader(allow_private_network=True, blocked_networks=["10.0.0.0/24"])
    with pytest.raises(BlockedAddressError, match="blocked_networks"):
        load_all(loader, f"http://{host}/")
    assert off_loopback_connections == []


@pytest.mark.parametrize("answer", [h.strip("[]") for h in EMBEDDING_10_0_0_5])
def test_blocked_networks_hold_for_resolved_names(answer: str, off_loopback_connections: list) -> None:
    resolver = CountingResolver({"intranet.example": [[answer]]})
    loader = make_loader(resolver=resolver, allow_private_network=True, blocked_networks=["10.0.0.0/24"], respect_robots=False)
    with pytest.raises(BlockedAddressError, match="blocked_networks"):
        load_all(loader, "http://intranet.example/")
    assert off_loopback_connections == []


def test_loopback_still_loads_beside_a_blocked_network(server: LocalServer) -> None:
    server.route("/page", PAGE)
    loader = make_loader(allow_private_network=True, blocked_networks=["10.0.0.0/24"])
    assert [d.text for d in load_all(loader, server.url("/page", host="[::ffff:127.0.0.1]"))] == ["local page"]


def _drip(head: bytes, every: float = 0.25):  # type: ignore[no-untyped-def]
    """A handler sending ``head`` one byte at a time (a status line or headers that never finish in time)."""

    def handler(request: BaseHTTPRequestHandler) -> None:
        for byte in head:
            request.wfile.write(bytes([byte]))
            request.wfile.flush()
            time.sleep(every)

    return handler


SLOW_STATUS = b"HTTP/1.0 200 OK\r\n" * 10
SLOW_HEADERS = b"HTTP/1.0 200 OK\r\n" + b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"


@pytest.mark.parametrize("head", [SLOW_STATUS, SLOW_HEADERS], ids=["status-line", "headers"])
def test_total_timeout_bounds_a_byte_drip_before_the_body(server: LocalServer, head: bytes) -> None:
    server.route("/page", _drip(head))
    loader = make_loader(allow_private_network=True, total_timeout=1.5, read_timeout=5.0, retries=0)
    started = time.monotonic()
    with pytest.raises(WebLoaderError, match="total_timeout"):
        load_all(loader, server.url("/page"))
    assert time.monotonic() - started < 3.0


def test_total_timeout_bounds_a_byte_drip_robots_txt(server: LocalServer) -> None:
    server.route("/robots.txt", _drip(SLOW_HEADERS))
    server.route("/page", PAGE)
    loader = make_loader(allow_private_network=True, total_timeout=1.5, read_timeout=5.0, retries=0)
    started = time.monotonic()
    with pytest.raises(RobotsDisallowedError, match="unreachable"):
        load_all(loader, server.url("/page"))
    assert time.monotonic() - started < 3.0
    assert "/page" not in server.paths()

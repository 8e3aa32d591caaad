"""SSRF protection against real local servers: refused before any connection, reachable only by opt-in."""

from __future__ import annotations

import ssl

import pytest
from web_servers import CountingResolver, LocalServer, load_all, make_loader, make_tls_files

from ragloom.errors import BlockedAddressError, WebLoaderError

PAGE = "<html><head><title>Local</title></head><body><p>local page</p></body></html>"

LOOPBACK_FORMS = [
    "127.0.0.1",
    "2130706433",
    "0x7f.1",
    "0x7f000001",
    "127.1",
    "0177.0.0.1",
    "127.0.0.1.",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "localhost",
    "LocalHost.",
]


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_every_spelling_of_loopback_is_refused_before_any_connection(server: LocalServer, host: str, off_loopback_connections: list) -> None:
    server.route("/page", PAGE)
    with pytest.raises(BlockedAddressError, match="refused to connect"):
        load_all(make_loader(), server.url("/page", host=host))
    assert server.requests == []
    assert off_loopback_connections == []


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_the_same_server_is_fetched_with_allow_private_network(server: LocalServer, host: str) -> None:
    server.route("/page", PAGE)
    [document] = load_all(make_loader(allow_private_network=True), server.url("/page", host=host))
    assert document.text == "local page"
    assert document.metadata["title"] == "Local"
    assert server.paths() == ["/robots.txt", "/page"]


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.1", "172.16.5.4", "192.168.1.1", "100.64.0.1", "169.254.1.1", "0.0.0.0", "0", "224.0.0.1",
        "255.255.255.255", "198.18.0.1", "192.0.2.1", "198.51.100.7", "203.0.113.9", "240.0.0.1", "192.0.0.8",
        "[::1]", "[::]", "[fc00::1]", "[fd12:3456::1]", "[fe80::1]", "[fec0::1]", "[ff02::1]", "[::127.0.0.1]",
        "[64:ff9b::a00:1]", "[64:ff9b::7f00:1]", "[64:ff9b:1::1]", "[2002:7f00:1::1]", "[2002:a00:1::]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[2001:db8::1]", "[::ffff:10.0.0.1]", "[::ffff:169.254.169.254]",
        "[100::1]", "[2001:2::1]",
    ],
)  # fmt: skip
def test_non_public_addresses_are_refused_without_a_connection_attempt(address: str, off_loopback_connections: list) -> None:
    with pytest.raises(BlockedAddressError):
        load_all(make_loader(), f"http://{address}/")
    assert off_loopback_connections == []


@pytest.mark.parametrize(
    "url",
    ["http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/", "http://100.100.100.200/", "http://[::ffff:a9fe:a9fe]/",
     "http://metadata.google.internal/computeMetadata/v1/", "http://metadata.google.internal./", "http://0.0.0.0/", "http://[ff02::1]/"],
)  # fmt: skip
def test_metadata_unspecified_and_multicast_stay_refused_even_with_the_opt_in(url: str, off_loopback_connections: list) -> None:
    resolver = CountingResolver({"metadata.google.internal": [["169.254.169.254"]]})
    with pytest.raises(BlockedAddressError):
        load_all(make_loader(resolver, allow_private_network=True, allowed_networks=["0.0.0.0/0", "::/0"]), url)
    assert resolver.lookups == []  # the name is refused before it is looked up
    assert off_loopback_connections == []


def test_a_public_looking_name_resolving_to_loopback_is_refused(server: LocalServer) -> None:
    server.route("/page", PAGE)
    resolver = CountingResolver({"docs.example.com": [["127.0.0.1"]]})
    with pytest.raises(BlockedAddressError, match=r"docs\.example\.com \(127\.0\.0\.1\).*loopback"):
        load_all(make_loader(resolver), server.url("/page", host="docs.example.com"))
    assert server.requests == []


def test_every_resolved_address_is_checked(server: LocalServer, off_loopback_connections: list) -> None:
    resolver = CountingResolver({"docs.example.com": [["93.184.216.34", "127.0.0.1"]]})
    with pytest.raises(BlockedAddressError, match="127.0.0.1"):
        load_all(make_loader(resolver), server.url("/page", host="docs.example.com"))
    assert server.requests == []
    assert off_loopback_connections == []


def test_a_checked_public_address_is_the_one_connected_to(off_loopback_connections: list) -> None:
    resolver = CountingResolver({"www.example.org": [["93.184.216.34"]]})
    with pytest.raises(WebLoaderError, match="connection failed") as caught:
        load_all(make_loader(resolver, retries=0, respect_robots=False), "http://www.example.org/")
    assert not isinstance(caught.value, BlockedAddressError)
    assert off_loopback_connections == [("93.184.216.34", 80)]  # the test's fault injector refused it
    assert resolver.lookups == ["www.example.org"]


def test_opt_in_connects_to_the_resolved_address_with_the_original_host_header(server: LocalServer) -> None:
    server.route("/page", PAGE)
    resolver = CountingResolver({"intranet.corp": [["127.0.0.1"]]})
    [document] = load_all(make_loader(resolver, allow_private_network=True), server.url("/page", host="intranet.corp"))
    assert document.source == server.url("/page", host="intranet.corp")
    assert server.requests[-1].headers["host"] == f"intranet.corp:{server.port}"


def test_allowed_networks_opens_only_the_listed_network(server: LocalServer) -> None:
    server.route("/page", PAGE)
    [document] = load_all(make_loader(allowed_networks=["127.0.0.0/24"]), server.url("/page"))
    assert document.text == "local page"
    with pytest.raises(BlockedAddressError):
        load_all(make_loader(allowed_networks=["10.0.0.0/8"]), server.url("/page"))


def test_blocked_networks_win_over_the_opt_in(server: LocalServer) -> None:
    server.route("/page", PAGE)
    with pytest.raises(BlockedAddressError, match="blocked_networks"):
        load_all(make_loader(allow_private_network=True, blocked_networks=["127.0.0.0/8"]), server.url("/page"))
    assert server.requests == []


def test_dns_answering_differently_on_the_second_lookup_cannot_get_through(server: LocalServer) -> None:
    """First answer: the allowed server; every later answer: a forbidden one. No lookup happens after the check."""
    server.route("/page", PAGE)
    secret = LocalServer("127.0.0.2", server.port)
    try:
        secret.route("/page", "<p>SECRET</p>")
        resolver = CountingResolver({"rebind.example": [["127.0.0.1"], ["127.0.0.2"]]})
        loader = make_loader(resolver, allowed_networks=["127.0.0.1/32"], respect_robots=False)
        [document] = load_all(loader, server.url("/page", host="rebind.example"))
        assert document.text == "local page"
        assert resolver.lookups == ["rebind.example"]
        # a new connection looks up again and is checked again: the rebound answer is refused
        with pytest.raises(BlockedAddressError, match="127.0.0.2"):
            load_all(loader, server.url("/page", host="rebind.example"))
        assert secret.requests == []
    finally:
        secret.close()


def test_a_redirect_to_a_private_address_is_refused(server: LocalServer) -> None:
    inner = LocalServer("127.0.0.2")
    try:
        inner.route("/admin", "<p>admin</p>")
        server.route("/go", "", status=302, headers={"Location": inner.url("/admin")})
        loader = make_loader(allowed_networks=["127.0.0.1/32"])
        with pytest.raises(BlockedAddressError, match="redirect to http://127.0.0.2"):
            load_all(loader, server.url("/go"))
        assert inner.requests == []
        assert server.paths() == ["/robots.txt", "/go"]
    finally:
        inner.close()


@pytest.mark.parametrize(
    ("location", "error"),
    [
        ("http://2130706434/", BlockedAddressError),
        ("http://[::1]/", BlockedAddressError),
        ("http://169.254.169.254/latest/meta-data/", BlockedAddressError),
        ("http://internal.example/", BlockedAddressError),
        ("file:///etc/passwd", WebLoaderError),
        ("gopher://127.0.0.1:6379/_INFO", WebLoaderError),
        ("http://user@127.0.0.1/", WebLoaderError),
    ],
)
def test_redirect_targets_are_checked_hop_by_hop(server: LocalServer, location: str, error: type, off_loopback_connections: list) -> None:
    server.route("/go", "", status=301, headers={"Location": location})
    resolver = CountingResolver({"internal.example": [["10.1.2.3"]]})
    with pytest.raises(error, match="redirect"):
        load_all(make_loader(resolver, allowed_networks=["127.0.0.1/32"]), server.url("/go"))
    assert off_loopback_connections == []


def test_redirects_are_followed_up_to_max_redirects(server: LocalServer) -> None:
    for i in range(4):
        server.route(f"/r{i}", "", status=307, headers={"Location": f"/r{i + 1}"})
    server.route("/r4", PAGE)
    [document] = load_all(make_loader(allow_private_network=True), server.url("/r0"))
    assert document.source == server.url("/r4")
    assert document.metadata["requested_url"] == server.url("/r0")
    with pytest.raises(WebLoaderError, match="more than 2 redirects"):
        load_all(make_loader(allow_private_network=True, max_redirects=2), server.url("/r0"))


def test_userinfo_tricks_are_refused(server: LocalServer) -> None:
    server.route("/page", PAGE)
    for url in (f"http://docs.example.com@127.0.0.1:{server.port}/page", f"http://127.0.0.1:{server.port}\\@docs.example.com/page"):
        with pytest.raises(WebLoaderError, match="invalid URL"):
            load_all(make_loader(allow_private_network=True), url)
    assert server.requests == []


def test_secret_headers_are_not_sent_to_another_site(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    other = LocalServer("127.0.0.2")
    try:
        other.route("/landing", PAGE)
        other.route("/robots.txt", "", status=404)
        server.route("/go", "", status=302, headers={"Location": other.url("/landing")})
        monkeypatch.setenv("RAGLOOM_TEST_TOKEN", "s3cret")
        from ragloom.config import Secret

        loader = make_loader(allow_private_network=True, headers={"X-Team": "docs"}, secret_headers={"Authorization": Secret("RAGLOOM_TEST_TOKEN")})
        load_all(loader, server.url("/go"))
        assert server.requests[-1].headers["authorization"] == "s3cret"
        assert "authorization" not in other.requests[-1].headers
        assert other.requests[-1].headers["x-team"] == "docs"
    finally:
        other.close()


def test_no_proxy_from_the_environment_is_used(server: LocalServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.route("/page", PAGE)
    monkeypatch.setenv("HTTP_PROXY", "http://10.9.9.9:3128")
    monkeypatch.setenv("ALL_PROXY", "http://10.9.9.9:3128")
    [document] = load_all(make_loader(allow_private_network=True), server.url("/page"))
    assert document.text == "local page"


def test_tls_is_verified_against_the_host_name_while_connecting_to_the_checked_address(tmp_path, server: LocalServer) -> None:
    ca_file, cert_file, key_file = make_tls_files(tmp_path, "docs.internal.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    secure = LocalServer(ssl_context=context)
    try:
        secure.route("/page", PAGE)
        secure.route("/robots.txt", "", status=404)
        resolver = CountingResolver({"docs.internal.test": [["127.0.0.1"]], "other.internal.test": [["127.0.0.1"]]})
        loader = make_loader(resolver, allowed_networks=["127.0.0.1/32"], ca_bundle=ca_file)
        [document] = load_all(loader, secure.url("/page", host="docs.internal.test", scheme="https"))
        assert document.text == "local page"
        assert secure.requests[-1].headers["host"] == f"docs.internal.test:{secure.port}"
        with pytest.raises(WebLoaderError, match="(?i)certificate|hostname"):
            load_all(make_loader(resolver, allowed_networks=["127.0.0.1/32"], ca_bundle=ca_file, respect_robots=False, retries=0),
                     secure.url("/page", host="other.internal.test", scheme="https"))
    finally:
        secure.close()

"""The address policy, URL parsing and bounded decoding, without a network."""

from __future__ import annotations

import ipaddress
import re
import zlib

import brotli
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import BlockedAddressError, WebLoaderError
from ragloom_web import AddressGuard, classify, parse_url
from ragloom_web.addresses import Verdict
from ragloom_web.decoding import PIECE, decode_stream

PRIVATE_V4 = [ipaddress.ip_network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "127.0.0.0/8", "169.254.0.0/16", "100.64.0.0/10")]


@pytest.mark.parametrize(
    ("address", "fragment", "always"),
    [
        ("127.0.0.1", "loopback", False),
        ("10.1.2.3", "private", False),
        ("100.64.0.1", "carrier-grade NAT", False),
        ("169.254.169.254", "metadata", True),
        ("fd00:ec2::254", "metadata", True),
        ("0.0.0.0", "unspecified", True),
        ("255.255.255.255", "broadcast", True),
        ("239.1.1.1", "multicast", True),
        ("198.19.255.1", "benchmarking", False),
        ("203.0.113.1", "documentation", False),
        ("::ffff:192.168.0.1", "IPv4-mapped", False),
        ("64:ff9b::a9fe:a9fe", "metadata address embedded in an NAT64", True),
        ("2002:c0a8:101::1", "6to4", False),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo", False),
        ("fe80::1", "link-local", False),
        ("fd00::1", "unique local", False),
        ("fec0::1", "site-local", False),
        ("::7f00:1", "IPv4-compatible", False),
        ("2001:10::1", "an address that is not globally routable", False),  # ORCHID: in no listed range, not global
    ],
)
def test_classify(address: str, fragment: str, always: bool) -> None:
    verdict = classify(ipaddress.ip_address(address))
    assert verdict is not None
    assert fragment in verdict.reason
    assert verdict.always is always


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:2800:220:1:248:1893:25c8:1946", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"])
def test_public_addresses_pass(address: str) -> None:
    assert classify(ipaddress.ip_address(address)) is None


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_ipv4_spelling_parses_to_the_same_address(number: int) -> None:
    address = ipaddress.IPv4Address(number)
    a, b, c, d = address.packed
    spellings = [
        str(number),
        hex(number),
        "0" + oct(number)[2:] if number else "0",
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"{hex(a)}.{oct(b).replace('0o', '0')}.{c}.{hex(d)}",
        f"{a}.{b}.{c}.{d}.",
    ]
    for spelling in spellings:
        assert parse_url(f"http://{spelling}/x").ip == address, spelling


@given(st.sampled_from(PRIVATE_V4), st.integers(min_value=0, max_value=2**32 - 1))
def test_private_ipv4_is_refused_in_every_ipv6_embedding(network: ipaddress.IPv4Network, offset: int) -> None:
    inner = network[offset % network.num_addresses]
    value = int(inner)
    embeddings = [
        ipaddress.IPv6Address((0xFFFF << 32) | value),  # IPv4-mapped
        ipaddress.IPv6Address((0x64FF9B << 96) | value),  # NAT64
        ipaddress.IPv6Address((0x2002 << 112) | (value << 80)),  # 6to4
    ]
    for address in (inner, *embeddings):
        with pytest.raises(BlockedAddressError):
            AddressGuard().check_ip(address)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/", "file:///etc/passwd", "javascript:alert(1)", "http:/example.com", "http://",
        "http://exa mple.com/", "http://example.com\\@evil/", "http://user:pw@example.com/", "http://%31%32%37.0.0.1/",
        "http://[fe80::1%25eth0]/", "http://[::1/", "http://example.com:99999/", "http://256.1.1.1/", "http://1.2.3.4.5/",
        "http://0x1g.1/", "http://exa_mple..com/",
    ],
)  # fmt: skip
def test_invalid_or_tricky_urls_are_refused(url: str) -> None:
    with pytest.raises(WebLoaderError):
        parse_url(url)


def test_normalisation() -> None:
    assert parse_url("HTTPS://Docs.Example.COM:443/a/./b/../c?q=1#top").url == "https://docs.example.com/a/c?q=1"
    assert parse_url("http://example.com.:8080").url == "http://example.com:8080/"
    assert parse_url("http://bücher.example/").url == "http://xn--bcher-kva.example/"
    assert parse_url("http://[0:0::1]:81/").url == "http://[::1]:81/"


def test_a_resolver_answer_that_is_not_an_address_is_refused() -> None:
    guard = AddressGuard(resolver=lambda host, port: ["2130706433"])
    with pytest.raises(BlockedAddressError, match="not an IP address"):
        guard.resolve("sneaky.example")


@pytest.mark.parametrize("coding", ["gzip", "br"])
def test_decoding_a_bomb_yields_bounded_pieces(coding: str) -> None:
    decoded_size = 64 * 1024 * 1024
    if coding == "gzip":
        compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        body = b"".join(compressor.compress(b"\0" * 2**20) for _ in range(decoded_size // 2**20)) + compressor.flush()
    else:
        body = brotli.compress(b"\0" * decoded_size, quality=5)
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)]
    pieces = decode_stream(iter(chunks), [coding])
    largest = 0
    total = 0
    for piece in pieces:
        largest = max(largest, len(piece))
        total += len(piece)
        if total > 3 * PIECE:
            break
    pieces.close()
    assert largest <= 2 * PIECE
    assert total <= 3 * PIECE + largest  # stopped after a few pieces, never the whole 64 MiB
    assert sum(len(p) for p in decode_stream(iter(chunks), [coding])) == decoded_size


def test_retry_after_in_seconds_and_as_a_date() -> None:
    from ragloom_web.fetch import parse_retry_after

    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


@pytest.mark.parametrize(("status", "policy"), [(200, "rules"), (404, "allow-all"), (401, "allow-all"), (429, "disallow-all"), (500, "disallow-all"), (503, "disallow-all")])
def test_robots_status_meanings(status: int, policy: str) -> None:
    from ragloom_web.robots import rules_for_status

    assert rules_for_status(status, "User-agent: *\nDisallow: /x").policy == policy


@pytest.mark.parametrize(
    ("address", "fragment"),
    [
        ("192.88.99.0", "6to4 relay anycast"),
        ("192.88.99.1", "6to4 relay anycast"),
        ("192.88.99.255", "6to4 relay anycast"),
        ("3fff::", "documentation"),
        ("3fff::1", "documentation"),
        ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"),
    ],
)
def test_ranges_python_calls_global_are_still_refused(address: str, fragment: str) -> None:
    """The 6to4 relay range and the 3fff::/20 documentation range are globally routable to ``ipaddress``: only the blocklist refuses them."""
    ip = ipaddress.ip_address(address)
    verdict = classify(ip)
    assert verdict is not None and fragment in verdict.reason and verdict.always is False
    with pytest.raises(BlockedAddressError, match=fragment):
        AddressGuard().check_ip(ip)
    with pytest.raises(BlockedAddressError, match=fragment):
        AddressGuard(resolver=lambda host, port: [address]).resolve("relay.example")
    assert AddressGuard(allow_private_network=True).check_ip(ip) == ip
    assert AddressGuard(allowed_networks=(ipaddress.ip_network(f"{address}/{ip.max_prefixlen}"),)).check_ip(ip) == ip


@pytest.mark.parametrize("address", ["192.88.98.255", "192.88.100.0", "3fff:1000::1", "3ffe:ffff::1"])
def test_neighbours_of_those_ranges_are_public(address: str) -> None:
    assert classify(ipaddress.ip_address(address)) is None


#: every range of the blocklist with its first and last address, the reason's words and whether no option allows it
RANGES = [
    ("255.255.255.255", "255.255.255.255", "the broadcast address", True),
    ("0.0.0.0", "0.255.255.255", "an unspecified ('this network') address", True),
    ("224.0.0.0", "239.255.255.255", "a multicast address", True),
    ("127.0.0.0", "127.255.255.255", "a loopback address", False),
    ("10.0.0.0", "10.255.255.255", "a private (RFC 1918) address", False),
    ("172.16.0.0", "172.31.255.255", "a private (RFC 1918) address", False),
    ("192.168.0.0", "192.168.255.255", "a private (RFC 1918) address", False),
    ("100.64.0.0", "100.127.255.255", "a carrier-grade NAT (100.64/10) address", False),
    ("169.254.0.0", "169.254.255.255", "a link-local address", False),
    ("192.0.0.0", "192.0.0.255", "an IETF protocol assignment address", False),
    ("192.0.2.0", "192.0.2.255", "a documentation (TEST-NET-1) address", False),
    ("198.51.100.0", "198.51.100.255", "a documentation (TEST-NET-2) address", False),
    ("203.0.113.0", "203.0.113.255", "a documentation (TEST-NET-3) address", False),
    ("198.18.0.0", "198.19.255.255", "a benchmarking address", False),
    ("192.88.99.0", "192.88.99.255", "a 6to4 relay anycast address", False),
    ("240.0.0.0", "255.255.255.254", "a reserved address", False),
    ("::", "::", "the unspecified address", True),
    ("ff00::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a multicast address", True),
    ("::1", "::1", "the loopback address", False),
    ("::2", "::fe:ffff", "an IPv4-compatible IPv6 address", False),
    ("64:ff9b:1::", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "a local-use NAT64 address", False),
    ("100::", "100::ffff:ffff:ffff:ffff", "a discard-only address", False),
    ("2001:0:808:808::f7f7:f7f7", "2001:0:808:808:ffff:ffff:f7f7:f7f7", "a Teredo address", False),
    ("2001:2::", "2001:2:0:ffff:ffff:ffff:ffff:ffff", "a benchmarking address", False),
    ("2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "a documentation address", False),
    ("3fff::", "3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "a documentation address", False),
    ("fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a unique local (ULA) address", False),
    ("fe80::", "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a link-local address", False),
    ("fec0::", "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "a site-local address", False),
]


@pytest.mark.parametrize(("first", "last", "reason", "always"), RANGES)
def test_every_blocked_range_from_first_to_last_address(first: str, last: str, reason: str, always: bool) -> None:
    for address in (first, last):
        verdict = classify(ipaddress.ip_address(address))
        assert verdict is not None, address
        assert (verdict.reason, verdict.always) == (reason, always), address
        guard = AddressGuard(allow_private_network=True, allowed_networks=(ipaddress.ip_network("::/0"), ipaddress.ip_network("0.0.0.0/0")))
        if always:
            with pytest.raises(BlockedAddressError, match="refused to connect to .*: it is " + re.escape(reason) + "$"):
                guard.check_ip(ipaddress.ip_address(address))
        else:
            with pytest.raises(BlockedAddressError, match=re.escape(f"refused to connect to {address}: it is {reason} (set allow_private_network")):
                AddressGuard().check_ip(ipaddress.ip_address(address))
            assert guard.check_ip(ipaddress.ip_address(address)) == ipaddress.ip_address(address)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("::ffff:127.0.0.1", "a loopback address embedded in an IPv4-mapped IPv6 address"),
        ("64:ff9b::10.0.0.1", "a private (RFC 1918) address embedded in an NAT64 IPv6 address"),
        ("2002:a00:1::", "a private (RFC 1918) address embedded in an 6to4 IPv6 address"),
        ("2001:0:a00:1::", "a private (RFC 1918) address embedded in an Teredo server IPv6 address"),
        ("2001:0:808:808:0:0:f5ff:fffe", "a private (RFC 1918) address embedded in an Teredo client IPv6 address"),
        ("::ffff:169.254.169.254", "a cloud metadata address embedded in an IPv4-mapped IPv6 address"),
    ],
)
def test_embedded_ipv4_reasons_name_the_embedding(address: str, reason: str) -> None:
    verdict = classify(ipaddress.ip_address(address))
    assert verdict is not None and verdict.reason == reason



@pytest.mark.parametrize("host", ["metadata.google.internal", "metadata.goog", "metadata", "instance-data", "instance-data.ec2.internal", "metadata.azure.internal", "metadata.tencentyun.com"])
def test_metadata_names_are_refused_before_any_lookup_whatever_the_options(host: str) -> None:
    looked_up: list[str] = []
    guard = AddressGuard(allow_private_network=True, resolver=lambda name, port: looked_up.append(name) or ["8.8.8.8"])
    with pytest.raises(BlockedAddressError) as info:
        guard.resolve(host)
    assert str(info.value) == f"refused to connect to {host}: it is a cloud metadata endpoint" and looked_up == []


def test_localhost_names_are_refused_unless_private_networks_are_allowed() -> None:
    for host in ("localhost", "api.localhost", "a.b.localhost"):
        with pytest.raises(BlockedAddressError) as info:
            AddressGuard(resolver=lambda name, port: ["8.8.8.8"]).resolve(host)
        assert str(info.value) == f"refused to connect to {host}: it names the loopback interface (set allow_private_network = true to fetch it)"
        assert AddressGuard(allow_private_network=True, resolver=lambda name, port: ["127.0.0.1"]).resolve(host) == [ipaddress.ip_address("127.0.0.1")]
    # a name that merely contains the word is an ordinary name
    assert AddressGuard(resolver=lambda name, port: ["8.8.8.8"]).resolve("notlocalhost") == [ipaddress.ip_address("8.8.8.8")]
    assert AddressGuard(resolver=lambda name, port: ["8.8.8.8"]).resolve("localhost.example") == [ipaddress.ip_address("8.8.8.8")]


def test_resolve_checks_every_answer_once_and_returns_them_in_order() -> None:
    asked: list[tuple[str, int]] = []

    def resolver(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["8.8.8.8", "2001:4860:4860::8888%eth0", "8.8.8.8", "::ffff:1.1.1.1"]

    guard = AddressGuard(resolver=resolver)
    assert guard.resolve("dns.example") == [ipaddress.ip_address("8.8.8.8"), ipaddress.ip_address("2001:4860:4860::8888"), ipaddress.ip_address("1.1.1.1")]
    assert asked == [("dns.example", 0)]
    with pytest.raises(BlockedAddressError) as info:
        AddressGuard(resolver=lambda h, p: ["8.8.8.8", "10.0.0.1"]).resolve("mixed.example")
    assert str(info.value).startswith("refused to connect to mixed.example (10.0.0.1): it is a private (RFC 1918) address")
    with pytest.raises(WebLoaderError) as empty:
        AddressGuard(resolver=lambda h, p: []).resolve("void.example")
    assert str(empty.value) == "host 'void.example' resolved to no address" and not isinstance(empty.value, BlockedAddressError)
    with pytest.raises(BlockedAddressError) as bad:
        AddressGuard(resolver=lambda h, p: ["8.8.8.8", "not-an-ip"]).resolve("odd.example")
    assert str(bad.value) == "refused to connect to odd.example: the resolver answered 'not-an-ip', not an IP address"
    # an IP literal is checked without asking the resolver
    assert AddressGuard(resolver=lambda h, p: asked.append((h, p)) or []).resolve("8.8.4.4") == [ipaddress.ip_address("8.8.4.4")]
    assert asked == [("dns.example", 0)]
    with pytest.raises(BlockedAddressError, match=r"^refused to connect to 10\.1\.1\.1: it is a private"):
        AddressGuard().resolve("10.1.1.1")


def test_check_ip_connects_to_the_ipv4_of_a_mapped_address_and_names_the_host() -> None:
    guard = AddressGuard()
    assert guard.check_ip(ipaddress.ip_address("::ffff:8.8.8.8")) == ipaddress.ip_address("8.8.8.8")
    assert guard.check_ip(ipaddress.ip_address("2001:4860::1")) == ipaddress.ip_address("2001:4860::1")
    private = AddressGuard(allow_private_network=True)
    assert private.check_ip(ipaddress.ip_address("::ffff:10.0.0.1")) == ipaddress.ip_address("10.0.0.1")
    with pytest.raises(BlockedAddressError) as info:
        guard.check_ip(ipaddress.ip_address("10.0.0.1"), host="intranet.example")
    assert str(info.value).startswith("refused to connect to intranet.example (10.0.0.1): it is")
    with pytest.raises(BlockedAddressError) as same:
        guard.check_ip(ipaddress.ip_address("10.0.0.1"), host="10.0.0.1")
    assert str(same.value).startswith("refused to connect to 10.0.0.1: it is")


def test_allowed_networks_allow_only_their_own_version_and_range() -> None:
    ten = AddressGuard(allowed_networks=(ipaddress.ip_network("10.0.0.0/8"),))
    assert ten.check_ip(ipaddress.ip_address("10.2.3.4")) == ipaddress.ip_address("10.2.3.4")
    assert ten.check_ip(ipaddress.ip_address("::ffff:10.2.3.4")) == ipaddress.ip_address("10.2.3.4")
    for refused in ("192.168.1.1", "fd00::1", "127.0.0.1"):
        with pytest.raises(BlockedAddressError):
            ten.check_ip(ipaddress.ip_address(refused))
    v6 = AddressGuard(allowed_networks=(ipaddress.ip_network("::/0"),))
    with pytest.raises(BlockedAddressError):
        v6.check_ip(ipaddress.ip_address("10.0.0.1"))  # an IPv6 network never allows an IPv4 address
    assert v6.check_ip(ipaddress.ip_address("fd00::1")) == ipaddress.ip_address("fd00::1")
    with pytest.raises(BlockedAddressError, match="cloud metadata"):
        AddressGuard(allowed_networks=(ipaddress.ip_network("169.254.0.0/16"),)).check_ip(ipaddress.ip_address("169.254.169.254"))


@pytest.mark.parametrize(
    ("address", "blocked"),
    [
        ("8.8.8.8", "8.8.8.0/24"),
        ("::ffff:8.8.8.8", "8.8.8.0/24"),
        ("64:ff9b::808:808", "8.8.8.0/24"),
        ("2002:808:808::1", "8.8.8.0/24"),
        ("64:ff9b:1:808:8:800::", "8.8.8.0/24"),  # local-use NAT64, /48 layout (bits 64-71 skipped)
        ("64:ff9b:1:8:8:808::", "8.8.8.0/24"),  # /56 layout
        ("64:ff9b:1:0:8:808:800:0", "8.8.8.0/24"),  # /64 layout
        ("64:ff9b:1::808:808", "8.8.8.0/24"),  # /96 layout
        ("::808:808", "8.8.8.0/24"),  # IPv4-compatible
        ("2606:4700::1", "2606:4700::/32"),
    ],
)
def test_blocked_networks_refuse_every_embedding_even_of_public_addresses(address: str, blocked: str) -> None:
    network = ipaddress.ip_network(blocked)
    guard = AddressGuard(allow_private_network=True, blocked_networks=(network,))
    with pytest.raises(BlockedAddressError) as info:
        guard.check_ip(ipaddress.ip_address(address))
    assert str(info.value) == f"refused to connect to {ipaddress.ip_address(address)}: it is in blocked_networks ({network})"
    assert AddressGuard(allow_private_network=True, blocked_networks=(ipaddress.ip_network("9.9.9.0/24"),)).check_ip(ipaddress.ip_address(address))


def test_blocked_ipv4_networks_leave_an_ordinary_ipv6_address_whose_low_bits_match() -> None:
    """Only real embeddings count: a global IPv6 address ending in 8.8.8.8's bits carries no IPv4 address."""
    guard = AddressGuard(blocked_networks=(ipaddress.ip_network("8.8.8.0/24"),))
    for address in ("2606:4700::808:808", "2606:4700:1::808:808"):
        assert guard.check_ip(ipaddress.ip_address(address)) == ipaddress.ip_address(address)


def test_an_address_outside_every_listed_range_but_not_global_is_refused_with_that_reason() -> None:
    address = ipaddress.ip_address("2001:10::1")  # ORCHID (2001:10::/28)
    assert classify(address) == Verdict("an address that is not globally routable", always=False)
    with pytest.raises(BlockedAddressError) as info:
        AddressGuard().check_ip(address)
    assert str(info.value) == (
        "refused to connect to 2001:10::1: it is an address that is not globally routable "
        "(set allow_private_network = true, or list its network in allowed_networks, to fetch it)"
    )
    assert AddressGuard(allow_private_network=True).check_ip(address) == address


def test_a_resolver_answer_is_cut_at_its_first_percent_sign() -> None:
    """Everything from the first ``%`` is a scope id and is dropped, however many follow."""
    guard = AddressGuard(allow_private_network=True, resolver=lambda h, p: ["fe80::1%eth0%2", "8.8.8.8%x%y"])
    assert guard.resolve("scoped.example") == [ipaddress.ip_address("fe80::1"), ipaddress.ip_address("8.8.8.8")]
    with pytest.raises(BlockedAddressError, match=r"^refused to connect to scoped\.example \(fe80::1\): it is a link-local"):
        AddressGuard(resolver=lambda h, p: ["fe80::1%eth0%2"]).resolve("scoped.example")


def test_parse_networks_and_its_error() -> None:
    from ragloom_web.addresses import parse_networks

    assert parse_networks(["10.0.0.0/8", "10.1.2.3/8", "fd00::1", "192.168.1.1"]) == (
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("10.0.0.0/8"),
        ipaddress.ip_network("fd00::1/128"),
        ipaddress.ip_network("192.168.1.1/32"),
    )
    with pytest.raises(ValueError) as info:
        parse_networks(["10.0.0.0/8", "ten"])
    assert str(info.value) == "'ten' is not an IP network (expected CIDR such as '10.0.0.0/8')"


def test_the_system_resolver_answers_once_and_names_a_failure() -> None:
    from ragloom_web.addresses import system_resolver

    assert system_resolver("127.0.0.1", 80) == ["127.0.0.1"]
    with pytest.raises(WebLoaderError, match=r"^cannot resolve host 'no-such-host\.invalid': "):
        system_resolver("no-such-host.invalid", 80)


def test_every_metadata_address_is_always_refused() -> None:
    from ragloom_web.addresses import METADATA_ADDRESSES

    expected = {"169.254.169.254", "169.254.170.2", "169.254.169.253", "169.254.169.123", "100.100.100.200", "192.0.0.192", "fd00:ec2::254", "fd00:ec2::23"}
    assert {str(a) for a in METADATA_ADDRESSES} == expected
    for address in expected:
        verdict = classify(ipaddress.ip_address(address))
        assert verdict == classify(ipaddress.ip_address(address)) and verdict is not None
        assert (verdict.reason, verdict.always) == ("a cloud metadata address", True)

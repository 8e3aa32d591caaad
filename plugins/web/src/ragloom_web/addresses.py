"""The SSRF guard: which addresses may be connected to.

A host name is resolved once (through an injectable :data:`Resolver`), every
address it resolves to is checked, and the connection goes to a checked
address (see :mod:`ragloom_web.transport`): a DNS answer that changes between
the check and the connection cannot slip through, because there is no second
lookup.

Refused unless ``allow_private_network`` (or ``allowed_networks``) opts in:
loopback, RFC 1918 private, link-local, CGNAT 100.64/10, IETF protocol
assignments, benchmarking 198.18/15, documentation ranges, reserved 240/4,
IPv6 ULA / link-local / site-local / documentation / benchmarking / discard,
IPv4-compatible IPv6, Teredo, local-use NAT64, anything else that is not
globally routable, and IPv4 addresses embedded in IPv4-mapped, NAT64 and
6to4 addresses when the embedded address is refused.

Always refused, whatever the options: cloud metadata addresses and names,
unspecified (0.0.0.0, ::), multicast and broadcast.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable, Sequence

import attrs

from ragloom.plugin import BlockedAddressError, WebLoaderError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

#: ``resolver(host, port) -> addresses`` (strings); the default asks the system once.
Resolver = Callable[[str, int], Sequence[str]]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean …
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS DNS resolver
        "169.254.169.123",  # AWS time sync
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud (legacy)
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS DNS over IPv6
    )
)
METADATA_HOSTNAMES = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
    }
)

_ALWAYS = "always"
_PRIVATE = "private"

_V4_RANGES: tuple[tuple[Network, str, str], ...] = tuple(
    (ipaddress.ip_network(net), reason, kind)
    for net, reason, kind in (
        ("255.255.255.255/32", "the broadcast address", _ALWAYS),
        ("0.0.0.0/8", "an unspecified ('this network') address", _ALWAYS),
        ("224.0.0.0/4", "a multicast address", _ALWAYS),
        ("127.0.0.0/8", "a loopback address", _PRIVATE),
        ("10.0.0.0/8", "a private (RFC 1918) address", _PRIVATE),
        ("172.16.0.0/12", "a private (RFC 1918) address", _PRIVATE),
        ("192.168.0.0/16", "a private (RFC 1918) address", _PRIVATE),
        ("100.64.0.0/10", "a carrier-grade NAT (100.64/10) address", _PRIVATE),
        ("169.254.0.0/16", "a link-local address", _PRIVATE),
        ("192.0.0.0/24", "an IETF protocol assignment address", _PRIVATE),
        ("192.0.2.0/24", "a documentation (TEST-NET-1) address", _PRIVATE),
        ("198.51.100.0/24", "a documentation (TEST-NET-2) address", _PRIVATE),
        ("203.0.113.0/24", "a documentation (TEST-NET-3) address", _PRIVATE),
        ("198.18.0.0/15", "a benchmarking address", _PRIVATE),
        ("192.88.99.0/24", "a 6to4 relay anycast address", _PRIVATE),
        ("240.0.0.0/4", "a reserved address", _PRIVATE),
    )
)
_V6_RANGES: tuple[tuple[Network, str, str], ...] = tuple(
    (ipaddress.ip_network(net), reason, kind)
    for net, reason, kind in (
        ("::/128", "the unspecified address", _ALWAYS),
        ("ff00::/8", "a multicast address", _ALWAYS),
        ("::1/128", "the loopback address", _PRIVATE),
        ("::/96", "an IPv4-compatible IPv6 address", _PRIVATE),
        ("64:ff9b:1::/48", "a local-use NAT64 address", _PRIVATE),
        ("100::/64", "a discard-only address", _PRIVATE),
        ("2001::/32", "a Teredo address", _PRIVATE),
        ("2001:2::/48", "a benchmarking address", _PRIVATE),
        ("2001:db8::/32", "a documentation address", _PRIVATE),
        ("3fff::/20", "a documentation address", _PRIVATE),
        ("fc00::/7", "a unique local (ULA) address", _PRIVATE),
        ("fe80::/10", "a link-local address", _PRIVATE),
        ("fec0::/10", "a site-local address", _PRIVATE),
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")
_V4_COMPATIBLE = ipaddress.ip_network("::/96")


def _rfc6052(value: int, prefix_length: int) -> ipaddress.IPv4Address:
    """The IPv4 address in an RFC 6052 IPv4-embedded IPv6 address with a prefix of ``prefix_length`` bits (bits 64–71 skipped)."""
    bits = value.to_bytes(16, "big")
    start = prefix_length // 8
    octets = [bits[i] for i in range(start, 16) if i != 8][:4]
    return ipaddress.IPv4Address(bytes(octets))


@attrs.frozen
class Verdict:
    """Why an address is refused; ``always`` when no option can allow it."""

    reason: str
    always: bool


def _embedded_v4(ip: ipaddress.IPv6Address) -> list[tuple[ipaddress.IPv4Address, str]]:
    """IPv4 addresses an IPv6 address carries (IPv4-mapped, NAT64, 6to4, Teredo)."""
    found: list[tuple[ipaddress.IPv4Address, str]] = []
    if ip.ipv4_mapped is not None:
        found.append((ip.ipv4_mapped, "IPv4-mapped"))
    if ip in _NAT64:
        found.append((ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"))

    if ip.sixtofour is not None:
        found.append((ip.sixtofour, "6to4"))
    if ip.teredo is not None:
        server, client = ip.teredo
        found.extend([(server, "Teredo server"), (client, "Teredo client")])
    return found


def _every_embedded_v4(ip: IPAddress) -> list[IPAddress]:
    """``ip`` and every IPv4 address it may carry, for ``blocked_networks``: also IPv4-compatible and each
    RFC 6052 layout of local-use NAT64 (RFC 8215 lets the operator pick the prefix length)."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return [ip]
    found: list[IPAddress] = [ip, *(inner for inner, _how in _embedded_v4(ip))]
    if ip in _NAT64_LOCAL:
        found.extend(_rfc6052(int(ip), length) for length in (48, 56, 64, 96))
    if ip in _V4_COMPATIBLE:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return found


def classify(ip: IPAddress) -> Verdict | None:
    """Why ``ip`` is not a public address, or None when it is one."""
    if ip in METADATA_ADDRESSES:
        return Verdict("a cloud metadata address", always=True)
    if isinstance(ip, ipaddress.IPv6Address):
        for inner, how in _embedded_v4(ip):
            verdict = classify(inner)
            if verdict is not None:
                return Verdict(f"{verdict.reason} embedded in an {how} IPv6 address", verdict.always)
        if ip.ipv4_mapped is not None:
            return None  # the same as its (public) IPv4 address
        if ip in _NAT64 or ip.sixtofour is not None:
            return None  # a translation of a public IPv4 address
        ranges = _V6_RANGES
    else:
        ranges = _V4_RANGES
    for network, reason, kind in ranges:
        if ip in network:
            return Verdict(reason, always=kind == _ALWAYS)
    if not ip.is_global:
        return Verdict("an address that is not globally routable", always=False)
    return None


def parse_networks(values: Iterable[str]) -> tuple[Network, ...]:
    """CIDR strings (``10.0.0.0/8``, ``fd00::/8``, a bare address) as networks; ValueError when one is invalid."""
    networks = []
    for value in values:
        try:
            networks.append(ipaddress.ip_network(value, strict=False))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP network (expected CIDR such as '10.0.0.0/8')") from None
    return tuple(networks)


def _connect_form(ip: IPAddress) -> IPAddress:
    """The address a socket really reaches (IPv4-mapped IPv6 is its IPv4 address)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def system_resolver(host: str, port: int) -> list[str]:
    """Every address of ``host`` from ``socket.getaddrinfo`` (one lookup)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise WebLoaderError(f"cannot resolve host {host!r}: {exc}") from None
    return list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))


@attrs.frozen(kw_only=True)
class AddressGuard:
    """Checks addresses and host names; resolves host names once and returns only checked addresses."""

    allow_private_network: bool = False
    allowed_networks: tuple[Network, ...] = ()
    blocked_networks: tuple[Network, ...] = ()
    resolver: Resolver = system_resolver

    def check_ip(self, ip: IPAddress, *, host: str | None = None) -> IPAddress:
        """The address to connect to, or BlockedAddressError saying why ``ip`` is refused."""
        target = _connect_form(ip)
        shown = str(ip) if host is None or host == str(ip) else f"{host} ({ip})"
        verdict = classify(ip)
        if verdict is not None and verdict.always:
            raise BlockedAddressError(f"refused to connect to {shown}: it is {verdict.reason}")
        candidates = [target, *_every_embedded_v4(ip)]
        for network in self.blocked_networks:
            for candidate in candidates:
                if candidate.version == network.version and candidate in network:
                    raise BlockedAddressError(f"refused to connect to {shown}: it is in blocked_networks ({network})")
        if verdict is None:
            return target
        if self.allow_private_network:
            return target
        for network in self.allowed_networks:
            if target.version == network.version and target in network:
                return target
        raise BlockedAddressError(
            f"refused to connect to {shown}: it is {verdict.reason} "
            "(set allow_private_network = true, or list its network in allowed_networks, to fetch it)"
        )

    def check_name(self, host: str) -> None:
        """Refuse names that are local or metadata endpoints by definition, before any lookup."""
        if host in METADATA_HOSTNAMES:
            raise BlockedAddressError(f"refused to connect to {host}: it is a cloud metadata endpoint")
        if (host == "localhost" or host.endswith(".localhost")) and not self.allow_private_network:
            raise BlockedAddressError(
                f"refused to connect to {host}: it names the loopback interface (set allow_private_network = true to fetch it)"
            )

    def resolve(self, host: str) -> list[IPAddress]:
        """Checked addresses for ``host`` (an IP literal or a name, resolved once); every answer must pass."""
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        if literal is not None:
            return [self.check_ip(literal)]
        self.check_name(host)
        answers = self.resolver(host, 0)
        if not answers:
            raise WebLoaderError(f"host {host!r} resolved to no address")
        checked = []
        for answer in answers:
            try:
                ip = ipaddress.ip_address(str(answer).split("%", 1)[0])
            except ValueError:
                raise BlockedAddressError(f"refused to connect to {host}: the resolver answered {answer!r}, not an IP address") from None
            checked.append(self.check_ip(ip, host=host))
        return list(dict.fromkeys(checked))

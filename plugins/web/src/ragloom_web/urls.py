"""Strict URL parsing and normalisation.

Only ``http`` and ``https`` URLs pass. Userinfo (``user@host``), backslashes,
whitespace, control characters, percent-encoded hosts and IPv6 zone ids are
refused: they are the spellings that make two parsers disagree about which
host a URL names. Numeric IPv4 hosts are read the way browsers read them
(WHATWG URL standard): ``2130706433``, ``0x7f.1``, ``0177.0.0.1`` and
``127.1`` all mean ``127.0.0.1`` and are rewritten to it, so the address
check and the connection see the same address. A trailing dot on the host is
dropped. The normalised URL (lower-case scheme and host, no default port, no
fragment, dot segments removed) is a document's ``source``.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urljoin

import attrs

from ragloom.plugin import WebLoaderError

DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")
_HOST_LABELS = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")


@attrs.frozen
class ParsedURL:
    """A checked URL: ``url`` is the normalised string, ``host`` a hostname or an IP in canonical form."""

    url: str
    scheme: str
    host: str
    port: int
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None

    @property
    def site(self) -> str:
        """``scheme://host:port`` — the key of robots.txt and of per-host limits."""
        return f"{self.scheme}://{self.netloc}"

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


def _parse_ipv4_number(part: str) -> int | None:
    """One dotted part as the WHATWG parser reads it (decimal, ``0x`` hex, leading-zero octal)."""
    if not part:
        return None
    base = 10
    if part[:2].lower() == "0x":
        part, base = part[2:], 16
        if not part:
            return 0
    elif len(part) > 1 and part[0] == "0":
        part, base = part[1:], 8
    digits = {10: "0123456789", 16: "0123456789abcdef", 8: "01234567"}[base]
    if not all(c in digits for c in part.lower()):
        return None
    return int(part, base)


def _ends_in_number(host: str) -> bool:
    last = host.split(".")[-1]
    if last == "" and host.count(".") > 0:
        last = host.split(".")[-2]
    return bool(last) and (last.isdigit() or (last[:2].lower() == "0x" and all(c in "0123456789abcdef" for c in last[2:].lower())))


def parse_ipv4_host(host: str) -> ipaddress.IPv4Address:
    """A host whose last label is a number, read as IPv4 (WHATWG); WebLoaderError when it is not a valid one."""
    parts = host.split(".")
    if parts and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4:
        raise ValueError(host)
    numbers = [_parse_ipv4_number(p) for p in parts]
    if any(n is None for n in numbers):
        raise ValueError(host)
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise ValueError(host)
    address = values[-1]
    for i, n in enumerate(values[:-1]):
        address += n * 256 ** (3 - i)
    return ipaddress.IPv4Address(address)


def _bad(url: str, why: str) -> WebLoaderError:
    return WebLoaderError(f"invalid URL: {why}", source=url)


def _split_authority(raw: str, rest: str) -> tuple[str, str]:
    """``(authority, path+query+fragment)`` of the part after ``scheme://``."""
    match = re.search(r"[/?#]", rest)
    if match is None:
        return rest, ""
    return rest[: match.start()], rest[match.start() :]


def _parse_host(raw: str, hostport: str) -> tuple[str, str, ipaddress.IPv4Address | ipaddress.IPv6Address | None]:
    """``(host, port text, ip)`` with the host in canonical form."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise _bad(raw, "unclosed '[' in the host")
        literal, after = hostport[1:end], hostport[end + 1 :]
        if "%" in literal:
            raise _bad(raw, "IPv6 zone ids are not allowed")
        try:
            ip6 = ipaddress.IPv6Address(literal)
        except ValueError:
            raise _bad(raw, f"{literal!r} is not an IPv6 address") from None
        if after and not after.startswith(":"):
            raise _bad(raw, "unexpected text after the IPv6 address")
        return str(ip6), after[1:], ip6
    host, sep, port = hostport.rpartition(":")
    if not sep:
        host, port = hostport, ""
    if not host:
        raise _bad(raw, "no host")
    if "%" in host:
        raise _bad(raw, "percent-encoded hosts are not allowed")
    if host.endswith("."):
        host = host[:-1]
    if not host or host.endswith("."):
        raise _bad(raw, "empty label in the host")
    if not host.isascii():
        try:
            import idna

            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError) as exc:
            raise _bad(raw, f"invalid international host name ({exc})") from None
    host = host.lower()
    if _ends_in_number(host):
        try:
            ip4 = parse_ipv4_host(host)
        except ValueError:
            raise _bad(raw, f"{host!r} is not a valid IPv4 address") from None
        return str(ip4), port, ip4
    if len(host) > 253 or not all(_HOST_LABELS.match(label) for label in host.split(".")):
        raise _bad(raw, f"{host!r} is not a valid host name")
    return host, port, None


def parse_url(raw: str) -> ParsedURL:
    """Check and normalise an http(s) URL; WebLoaderError names what is wrong."""
    if not isinstance(raw, str):
        raise WebLoaderError(f"a URL must be a string, got {type(raw).__name__}")
    match = _SCHEME.match(raw)
    if match is None or not raw[match.end() :].startswith("//"):
        raise _bad(raw, "expected http://… or https://…")
    scheme = match.group(1).lower()
    if scheme not in DEFAULT_PORTS:
        raise WebLoaderError(f"unsupported URL scheme {scheme!r}: only http and https are fetched", source=raw)
    if _FORBIDDEN.search(raw):
        raise _bad(raw, "whitespace, control characters and backslashes are not allowed")
    authority, tail = _split_authority(raw, raw[match.end() + 2 :])
    if "@" in authority:
        raise _bad(raw, "credentials in the URL (user@host) are not allowed; send them with `secret_headers`")
    host, port_text, ip = _parse_host(raw, authority)
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise _bad(raw, f"invalid port {port_text!r}")
        port = int(port_text)
    else:
        port = DEFAULT_PORTS[scheme]
    tail = tail.split("#", 1)[0]
    if tail.startswith("?"):
        tail = "/" + tail
    netloc_host = f"[{host}]" if isinstance(ip, ipaddress.IPv6Address) else host
    netloc = netloc_host if port == DEFAULT_PORTS[scheme] else f"{netloc_host}:{port}"
    import httpx

    try:
        normalised = str(httpx.URL(f"{scheme}://{netloc}{tail or '/'}"))
    except (httpx.InvalidURL, ValueError) as exc:
        raise _bad(raw, str(exc)) from None
    return ParsedURL(url=normalised, scheme=scheme, host=host, port=port, ip=ip)


def normalise_url(raw: str) -> str:
    """The normalised form of a URL (see :func:`parse_url`)."""
    return parse_url(raw).url


def resolve_reference(base: str, reference: str) -> str:
    """A (possibly relative) reference such as a ``Location`` header, made absolute against ``base``."""
    return urljoin(base, reference.strip())

"""Options of the ``web`` loader (``[loaders.web]``)."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ragloom.plugin import DEFAULT_MAX_TEXT_CHARS, Secret
from ragloom_web.addresses import parse_networks

DEFAULT_USER_AGENT = "ragloom-web/0.1 (+https://pypi.org/project/ragloom-web/)"
DEFAULT_MAX_RESPONSE_BYTES = 50 * 1000 * 1000


def _networks(_instance: object, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:  # type: ignore[type-arg]
    try:
        parse_networks(value)
    except ValueError as exc:
        raise ValueError(f"{attribute.name}: {exc}") from None


def _header_names(_instance: object, attribute: attrs.Attribute, value: dict) -> None:  # type: ignore[type-arg]
    for name in value:
        if not name or any(c in name for c in " \t\r\n:") or not name.isascii():
            raise ValueError(f"{attribute.name}: {name!r} is not a valid header name")
        if name.lower() in ("host", "content-length", "transfer-encoding", "connection", "accept-encoding"):
            raise ValueError(f"{attribute.name}: the {name} header is set by the loader")
    for item in value.values():
        if isinstance(item, str) and any(c in item for c in "\r\n"):
            raise ValueError(f"{attribute.name}: header values must not contain line breaks")


_positive: Any = attrs.validators.gt(0)  # for int and float fields alike
_non_negative: Any = attrs.validators.ge(0)


@attrs.frozen(kw_only=True)
class WebLoaderConfig:
    """Options of the web loader; every one is described in docs/web.md.

    Security: ``allow_private_network``, ``allowed_networks``, ``blocked_networks``,
    ``max_redirects``, ``verify_tls``, ``ca_bundle``. Politeness: ``respect_robots``,
    ``robots_cache_ttl``, ``user_agent``, ``max_concurrency``, ``per_host_concurrency``,
    ``politeness_delay``, ``max_crawl_delay``. Requests: ``headers``, ``secret_headers``,
    timeouts, ``retries``, ``backoff``, ``max_retry_wait``. Bodies: ``max_response_bytes``,
    ``on_too_large``. Content: ``selector``, ``encoding``, ``max_text_chars``,
    ``record_fetched_at``. Many URLs: ``max_sitemap_urls``, ``on_url_error``.
    """

    # security
    allow_private_network: bool = False
    allowed_networks: tuple[str, ...] = attrs.field(default=(), validator=_networks)
    blocked_networks: tuple[str, ...] = attrs.field(default=(), validator=_networks)
    max_redirects: int = attrs.field(default=5, validator=_non_negative)
    verify_tls: bool = True
    ca_bundle: str | None = None
    # politeness
    respect_robots: bool = True
    robots_cache_ttl: float = attrs.field(default=86400.0, validator=_non_negative)
    user_agent: str = attrs.field(default=DEFAULT_USER_AGENT, validator=attrs.validators.min_len(1))
    max_concurrency: int = attrs.field(default=4, validator=_positive)
    per_host_concurrency: int = attrs.field(default=2, validator=_positive)
    politeness_delay: float = attrs.field(default=0.5, validator=_non_negative)
    max_crawl_delay: float = attrs.field(default=30.0, validator=_non_negative)
    # requests
    headers: dict[str, str] = attrs.field(factory=dict, validator=_header_names)
    secret_headers: dict[str, Secret] = attrs.field(factory=dict, validator=_header_names)
    connect_timeout: float = attrs.field(default=10.0, validator=_positive)
    read_timeout: float = attrs.field(default=30.0, validator=_positive)
    total_timeout: float = attrs.field(default=120.0, validator=_positive)
    retries: int = attrs.field(default=2, validator=_non_negative)
    backoff: float = attrs.field(default=0.5, validator=_non_negative)
    max_retry_wait: float = attrs.field(default=60.0, validator=_non_negative)
    # bodies and content
    max_response_bytes: int = attrs.field(default=DEFAULT_MAX_RESPONSE_BYTES, validator=_positive)
    on_too_large: Literal["fail", "truncate"] = "fail"
    selector: str | None = None
    encoding: str | None = None
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=_positive)
    record_fetched_at: bool = True
    # many URLs
    max_sitemap_urls: int = attrs.field(default=10_000, validator=_positive)
    on_url_error: Literal["raise", "skip"] = "raise"

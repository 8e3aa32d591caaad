"""sitemap.xml parsing (sitemaps.org protocol): ``<urlset>`` pages and ``<sitemapindex>`` children.

Documents with a DOCTYPE are refused (no entity tricks); elements are matched
by local name, so the sitemap namespace is optional.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import attrs

from ragloom.plugin import WebLoaderError


@attrs.frozen(kw_only=True)
class Sitemap:
    """``kind`` is ``urlset`` (``urls`` are pages) or ``sitemapindex`` (``urls`` are sitemaps)."""

    kind: str
    urls: tuple[str, ...]


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_sitemap(data: bytes, source: str, *, max_urls: int) -> Sitemap:
    """The URLs of a sitemap or sitemap index; WebLoaderError when it is neither, or lists over ``max_urls``."""
    if b"<!DOCTYPE" in data[:4096].upper() or b"<!ENTITY" in data.upper():
        raise WebLoaderError("sitemaps with a DOCTYPE or entities are refused", source=source)
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise WebLoaderError(f"invalid sitemap XML: {exc}", source=source) from None
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise WebLoaderError(f"XML whose root is <{kind}> is not a sitemap (expected <urlset> or <sitemapindex>)", source=source)
    item = "url" if kind == "urlset" else "sitemap"
    urls: list[str] = []
    for element in root:
        if _local(element.tag) != item:
            continue
        for child in element:
            if _local(child.tag) == "loc" and child.text and child.text.strip():
                urls.append(child.text.strip())
                if len(urls) > max_urls:
                    raise WebLoaderError(f"the sitemap lists more than {max_urls} URLs (max_sitemap_urls)", source=source)
    return Sitemap(kind=kind, urls=tuple(dict.fromkeys(urls)))

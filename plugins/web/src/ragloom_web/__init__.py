"""ragloom-web: a loader for http(s) URLs that cannot be turned against the network it runs in.

Names are imported on first use, so discovering the plugin (which imports this
package) does not import httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragloom_web.addresses import AddressGuard, Resolver, classify, system_resolver
    from ragloom_web.config import WebLoaderConfig
    from ragloom_web.loader import WebLoader
    from ragloom_web.urls import normalise_url, parse_url

_EXPORTS = {
    "AddressGuard": "ragloom_web.addresses",
    "Resolver": "ragloom_web.addresses",
    "WebLoader": "ragloom_web.loader",
    "WebLoaderConfig": "ragloom_web.config",
    "classify": "ragloom_web.addresses",
    "normalise_url": "ragloom_web.urls",
    "parse_url": "ragloom_web.urls",
    "system_resolver": "ragloom_web.addresses",
}

__all__ = [
    "AddressGuard",
    "Resolver",
    "WebLoader",
    "WebLoaderConfig",
    "classify",
    "normalise_url",
    "parse_url",
    "system_resolver",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragloom_web' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

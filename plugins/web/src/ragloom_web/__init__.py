"""ragloom-web: a loader for http(s) URLs that cannot be turned against the network it runs in."""

from ragloom_web.addresses import AddressGuard, Resolver, classify, system_resolver
from ragloom_web.config import WebLoaderConfig
from ragloom_web.loader import WebLoader
from ragloom_web.urls import normalise_url, parse_url

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

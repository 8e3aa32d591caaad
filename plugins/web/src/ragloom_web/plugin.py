"""The ragloom-web plugin: registers the ``web`` loader for http:// and https:// sources."""

from __future__ import annotations

from ragloom.plugin import BuildContext, Loader, hookimpl
from ragloom_web.config import WebLoaderConfig


def _web(config: WebLoaderConfig, context: BuildContext) -> Loader:
    """Web pages over http(s): SSRF-safe, robots.txt-aware, HTML/text/JSON and sitemaps."""
    from ragloom_web.loader import WebLoader

    return WebLoader(config)


@hookimpl
def register_loaders(register):  # type: ignore[no-untyped-def]
    register("web", _web, config=WebLoaderConfig, schemes=("http", "https"))

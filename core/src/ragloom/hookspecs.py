"""The whole extension surface of ragloom: one registry hook per component kind.

Each hook hands the plugin a ``register`` callback::

    register(name, factory, *, config=ConfigClass, **options)

``factory(config, context)`` builds the component from its validated config
object (an attrs class; ``None`` when the component takes no options) and a
:class:`ragloom.plugins.BuildContext`. Loaders also pass ``suffixes=(...)``
and/or ``schemes=(...)``. See docs/hooks.md.
"""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("ragloom")
hookimpl = pluggy.HookimplMarker("ragloom")


@hookspec
def register_loaders(register):  # type: ignore[no-untyped-def]
    """Register loaders: register(name, factory, config=..., suffixes=(...), schemes=(...))."""


@hookspec
def register_chunkers(register):  # type: ignore[no-untyped-def]
    """Register chunkers: register(name, factory, config=...)."""


@hookspec
def register_embedders(register):  # type: ignore[no-untyped-def]
    """Register embedders: register(name, factory, config=...)."""


@hookspec
def register_stores(register):  # type: ignore[no-untyped-def]
    """Register vector stores: register(name, factory, config=...)."""


@hookspec
def register_retrievers(register):  # type: ignore[no-untyped-def]
    """Register retrievers: register(name, factory, config=...)."""


@hookspec
def register_rerankers(register):  # type: ignore[no-untyped-def]
    """Register rerankers: register(name, factory, config=...)."""


@hookspec
def register_llms(register):  # type: ignore[no-untyped-def]
    """Register LLM clients for ``[llm]``: register(name, factory, config=...)."""


@hookspec
def register_executors(register):  # type: ignore[no-untyped-def]
    """Register ingest executors for ``[ingest] executor = "name"``: register(name, factory, config=...)."""

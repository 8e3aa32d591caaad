"""Default plugin: the built-in rerankers."""

from __future__ import annotations

from ragloom.hookspecs import hookimpl


@hookimpl
def register_rerankers(register):  # type: ignore[no-untyped-def]
    """Core ships no reranker yet: the retrieval issue adds ``llm`` and ``keyword``."""

"""The one exception hierarchy of ragloom.

::

    RagloomError
    ├── ConfigError              (also ValueError) bad TOML / options; names file and key path
    ├── PluginError              a plugin failed to load, or two plugins claim one name
    ├── FilterError              (also ValueError) a malformed or unsupported filter
    ├── LoaderError              carries .source and .position (line, row, page …)
    │   └── WebLoaderError
    │       ├── BlockedAddressError      SSRF protection refused the address
    │       ├── RobotsDisallowedError    robots.txt forbids the URL
    │       └── ResponseTooLargeError    decoded body over the limit
    ├── EmbeddingError
    ├── StoreError
    │   └── DimensionMismatchError       store vectors and embedder differ in dimension
    ├── RerankError                      carries .raw_response and the cause
    └── LLMError                         an LLM call failed; carries .status_code

Backend exceptions are converted at the boundary and chained
(``raise StoreError(...) from exc``).
"""

from __future__ import annotations

import reprlib
from typing import Any

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80


def short_repr(value: Any) -> str:
    """A bounded repr for error messages: deep nesting, huge containers and 5,000-digit ints cannot break it."""
    try:
        return _SHORT.repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} too large to show>"


class RagloomError(Exception):
    """Root of every error ragloom raises on purpose."""


class ConfigError(RagloomError, ValueError):
    """A pipeline configuration is invalid.

    ``lines`` holds one message per problem (``expected int @ $.chunker.size``);
    ``file`` names the TOML file when there is one.
    """

    def __init__(self, message: str, *, file: str | None = None, lines: list[str] | None = None):
        self.file = file
        self.lines = list(lines) if lines else [message]
        prefix = f"{file}: " if file else ""
        super().__init__(prefix + message)


class PluginError(RagloomError):
    """A plugin could not be loaded, or registered something invalid."""


class FilterError(RagloomError, ValueError):
    """A metadata filter is malformed, or a store cannot evaluate it."""


class LoaderError(RagloomError):
    """A source could not be loaded. ``source`` and ``position`` say where."""

    def __init__(self, message: str, *, source: str | None = None, position: Any = None):
        self.source = source
        self.position = position
        where = ""
        if source is not None:
            where = f"{source}"
            if position is not None:
                where += f" ({position})"
            where += ": "
        super().__init__(where + message)
        self.reason = message


class WebLoaderError(LoaderError):
    """An http(s) source could not be fetched."""


class BlockedAddressError(WebLoaderError):
    """The URL resolves to an address the SSRF policy refuses."""


class RobotsDisallowedError(WebLoaderError):
    """robots.txt disallows fetching the URL."""


class ResponseTooLargeError(WebLoaderError):
    """The decoded response body exceeds the configured limit."""


class EmbeddingError(RagloomError):
    """An embedder failed or returned unusable vectors."""

    def __init__(self, message: str, *, status_code: int | None = None):
        self.status_code = status_code
        super().__init__(message)


class StoreError(RagloomError):
    """A vector store operation failed."""


class DimensionMismatchError(StoreError):
    """The store holds vectors of another dimension than the embedder makes."""

    def __init__(self, *, store_dim: int, embedder_dim: int, where: str = "store"):
        self.store_dim = store_dim
        self.embedder_dim = embedder_dim
        super().__init__(
            f"{where} holds vectors of dimension {store_dim}, but the embedder makes "
            f"dimension {embedder_dim}; use the embedder the store was built with, "
            "or a new store (another [store] path: one store holds vectors of one dimension in all its namespaces)"
        )


class RerankError(RagloomError):
    """A reranker failed; ``raw_response`` keeps what the model answered."""

    def __init__(self, message: str, *, raw_response: str | None = None, status_code: int | None = None):
        self.raw_response = raw_response
        self.status_code = status_code
        super().__init__(message)


class LLMError(RagloomError):
    """A call to a language model failed."""

    def __init__(self, message: str, *, status_code: int | None = None):
        self.status_code = status_code
        super().__init__(message)

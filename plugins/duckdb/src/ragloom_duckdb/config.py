"""Options of the ``duckdb`` store."""

from __future__ import annotations

import re
from typing import Literal

import attrs

from ragloom.plugin import BM25Config

#: what ``memory_limit`` accepts: a number and a unit, as DuckDB's setting takes it
MEMORY_SIZE = r"\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)"


@attrs.frozen(kw_only=True)
class DuckDBStoreConfig:
    """``[store]`` options of ``type = "duckdb"``.

    ``path`` is relative to the config file's folder (``":memory:"`` keeps
    nothing). ``index = "hnsw"`` adds an HNSW index (``m``,
    ``ef_construction``, ``ef_search``; kept in the process and saved beside
    the file, never inside it) used for unfiltered searches of a namespace
    holding at least ``hnsw_min_chunks`` chunks; smaller or filtered searches
    stay exact. ``memory_limit`` caps DuckDB's own memory (its buffer cache;
    ``None``: DuckDB's default, 80% of RAM), spilling to ``<path>.tmp`` beyond
    it, so an ingest's memory does not grow with the store.
    """

    path: str = attrs.field(default=".ragloom/ragloom.duckdb", validator=attrs.validators.min_len(1))
    read_only: bool = False
    index: Literal["exact", "hnsw"] = attrs.field(default="exact", validator=attrs.validators.in_(("exact", "hnsw")))
    m: int = attrs.field(default=16, validator=[attrs.validators.ge(2), attrs.validators.le(256)])
    ef_construction: int = attrs.field(default=128, validator=[attrs.validators.ge(1), attrs.validators.le(10_000)])
    ef_search: int = attrs.field(default=256, validator=[attrs.validators.ge(1), attrs.validators.le(10_000)])
    hnsw_min_chunks: int = attrs.field(default=100_000, validator=attrs.validators.ge(0))
    threads: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    memory_limit: str | None = attrs.field(default="512MB", validator=lambda _, __, value: _check_memory_size(value))
    bm25: BM25Config = attrs.field(factory=BM25Config)


def _check_memory_size(value: str | None) -> None:
    if value is not None and not re.fullmatch(MEMORY_SIZE, value, flags=re.IGNORECASE):
        raise ValueError(f"'memory_limit' must be a size such as \"512MB\" or \"2GB\", not {value!r}")

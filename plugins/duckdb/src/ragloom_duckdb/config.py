"""Options of the ``duckdb`` store."""

from __future__ import annotations

from typing import Literal

import attrs

from ragloom.plugin import BM25Config


@attrs.frozen(kw_only=True)
class DuckDBStoreConfig:
    """``[store]`` options of ``type = "duckdb"``.

    ``path`` is relative to the config file's folder (``":memory:"`` keeps
    nothing). ``index = "hnsw"`` adds a vss HNSW index (``m``,
    ``ef_construction``, ``ef_search``) used for unfiltered searches of a
    namespace holding at least ``hnsw_min_chunks`` chunks; smaller or filtered
    searches stay exact.
    """

    path: str = attrs.field(default=".ragloom/ragloom.duckdb", validator=attrs.validators.min_len(1))
    read_only: bool = False
    index: Literal["exact", "hnsw"] = attrs.field(default="exact", validator=attrs.validators.in_(("exact", "hnsw")))
    m: int = attrs.field(default=16, validator=[attrs.validators.ge(2), attrs.validators.le(256)])
    ef_construction: int = attrs.field(default=128, validator=[attrs.validators.ge(1), attrs.validators.le(10_000)])
    ef_search: int = attrs.field(default=256, validator=[attrs.validators.ge(1), attrs.validators.le(10_000)])
    hnsw_min_chunks: int = attrs.field(default=100_000, validator=attrs.validators.ge(0))
    threads: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    bm25: BM25Config = attrs.field(factory=BM25Config)

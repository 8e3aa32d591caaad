"""A bulk write ends with VACUUM (ANALYZE): its pages are all-visible, so keyword search reads the postings index-only at once."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.types import Chunk
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "vac"
WORDS = "lamp glows warm cold light fox dog river stone cloud rain sun moon star tree leaf wind fire ice sea".split()


def _write(store: PgVectorStore, count: int, rng: np.random.Generator) -> None:
    chunks = []
    for i in range(count):
        text = " ".join(rng.choice(WORDS, size=12))
        chunks.append(Chunk(id=f"d{i}:0", document_id=f"d{i}", index=0, text=text, start=0, end=len(text), source="/bulk.md"))
    with store.session(NS) as session:
        stage = session.stage("/bulk.md")
        stage.write(chunks, rng.normal(size=(count, 8)).astype(np.float32))
        stage.commit()


def _durable(dsn: str) -> str:
    """The test server commits asynchronously; VACUUM marks a page all-visible only once its
    rows' commit is flushed, as it always is on a server with the default synchronous commit."""
    return dsn + ("&" if "?" in dsn else "?") + "options=-csynchronous_commit%3Don"


def _manual_vacuums(pg: Any, schema: str) -> dict[str, int]:
    rows = pg.execute("SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE schemaname = %s", [schema])
    return {name: int(count) for name, count in rows}


def _all_visible(pg: Any, schema: str, table: str) -> tuple[int, int]:
    """(pages, pages marked all-visible): an index-only scan skips the heap only on the latter."""
    ((pages, visible),) = pg.execute("SELECT relpages, relallvisible FROM pg_class WHERE oid = %s::regclass", [f"{schema}.{table}"])
    return int(pages), int(visible)


def test_a_bulk_write_is_vacuumed_so_postings_are_read_index_only(pg: Any, pg_schema: str) -> None:
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=2000), dsn=_durable(pg.dsn))
    try:
        _write(store, 3000, np.random.default_rng(1))
        pg.execute("SELECT pg_stat_force_next_flush()")
        vacuums = _manual_vacuums(pg, pg_schema)
        assert vacuums["chunks"] >= 1 and vacuums["postings"] >= 1, vacuums
        pages, visible = _all_visible(pg, pg_schema, "postings")
        assert pages > 0 and visible == pages
        assert len(store.keyword_search(NS, "fox river moon", top_k=5)) == 5
    finally:
        store.close()


def test_a_small_write_or_vacuum_off_leaves_it_to_autovacuum(pg: Any, pg_schema: str) -> None:
    for config in (PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=5000),
                   PgVectorStoreConfig(schema=pg_schema, index="exact", vacuum_after_rows=0)):
        store = PgVectorStore(config, dsn=_durable(pg.dsn))
        try:
            _write(store, 3000, np.random.default_rng(2))
        finally:
            store.close()
    pg.execute("SELECT pg_stat_force_next_flush()")
    assert _manual_vacuums(pg, pg_schema).get("postings", 0) == 0
    assert _all_visible(pg, pg_schema, "postings")[1] == 0

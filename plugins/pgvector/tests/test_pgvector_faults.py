"""Connections cut mid-ingest and a server restarted between queries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.errors import RagloomError
from ragloom.pipeline import Pipeline
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

NS = "faults"


class KillingEmbedder:
    """The real hash embedder; its ``kill_at``-th call terminates the ingest's database connection first (a fault injected)."""

    def __init__(self, dsn: str, kill_at: int):
        self.inner = HashEmbedder(HashEmbedderConfig(dim=32))
        self.dsn = dsn
        self.kill_at = kill_at
        self.calls = 0
        self.killed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.kill_at:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE state LIKE 'idle in transaction%%' AND pid <> pg_backend_pid() AND datname = current_database()"
                ).fetchall()
            self.killed = len(rows)
        return self.inner.embed_documents(texts)


def _corpus(root: Path, version: int, files: int = 30, big: bool = False) -> None:
    """``files`` one-chunk files; with ``big`` the last one holds 1,200 paragraphs (more chunks than a batch)."""
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        paragraph = f"File {i} version {version}: the lamp glows in the night."
        text = "\n\n".join([paragraph] * (1200 if big and i == files - 1 else 1))
        (root / f"f{i:02d}.md").write_text(text, encoding="utf-8")


def _pipeline(store: PgVectorStore, embedder: Any) -> Pipeline:
    builder = Pipeline.builder().namespace(NS).store(store).embedder(embedder).chunker("recursive", size=200, overlap=0)
    return builder.ingest_options(batch_size=256).build()  # the kill test counts embedder calls of 256 chunks


def _versions(store: PgVectorStore) -> dict[str, str]:
    results = store.search(NS, np.ones(32, dtype=np.float32), top_k=10_000)
    assert len({r.chunk_id for r in results}) == len(results)
    return {r.source: r.text.split()[3].rstrip(":") for r in results}


def test_connection_killed_mid_ingest_is_a_clear_error_keeps_old_generation_and_retry_succeeds(
    pg: Any, pg_schema: str, tmp_path: Path
) -> None:
    root = tmp_path / "docs"
    _corpus(root, 1, big=True)
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)
    try:
        first = _pipeline(store, HashEmbedder(HashEmbedderConfig(dim=32))).ingest(str(root))
        assert set(_versions(store).values()) == {"1"} and first.chunks > 29 + 256
        _corpus(root, 2, big=True)
        # call 1 embeds the 29 small files (held together), which commit inside the session's open
        # transaction; call 2, the big file's first batch, cuts that transaction's connection
        embedder = KillingEmbedder(pg.dsn, kill_at=2)
        with pytest.raises(RagloomError) as caught:  # the pipeline names the file it was ingesting
            _pipeline(store, embedder).ingest(str(root))
        assert embedder.killed >= 1
        message = str(caught.value)
        assert "connection to PostgreSQL was lost" in message and "keep their old generation" in message
        versions = _versions(store)
        assert len(versions) == 30 and set(versions.values()) == {"1"}  # the whole unflushed group stayed old
        assert store.count(NS) == first.chunks
        result = _pipeline(store, HashEmbedder(HashEmbedderConfig(dim=32))).ingest(str(root))
        assert result.failed == ()
        versions = _versions(store)
        assert len(versions) == 30 and set(versions.values()) == {"2"}
        assert store.count(NS) == first.chunks
    finally:
        store.close()


def test_server_restart_between_queries_the_pool_recovers(pg: Any, pg_schema: str) -> None:
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema, pool_min=2), dsn=pg.dsn)
    try:
        from ragloom.types import Chunk

        chunks = [
            Chunk(id=f"d:{i}", document_id="d", index=i, text=f"lamp {i}", start=0, end=6, source="/r.md") for i in range(5)
        ]
        with store.session(NS) as session:
            stage = session.stage("/r.md")
            stage.write(chunks, np.eye(5, 8, dtype=np.float32) + 0.1)
            stage.commit()
        before = [r.chunk_id for r in store.search(NS, np.eye(8)[0], top_k=3)]
        if pg.server is not None:
            pg.restart()
        else:  # an external server cannot be restarted from here: cut every connection as a restart does
            pg.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()"
            )
        after = [r.chunk_id for r in store.search(NS, np.eye(8)[0], top_k=3)]
        assert after == before
        assert [r.chunk_id for r in store.keyword_search(NS, "lamp", top_k=10)] != []
        assert store.count(NS) == 5
    finally:
        store.close()

"""How often an HNSW search asks the index: ``ef_search`` grows fourfold while too few of the index's candidates
belong to the namespace, up to 1000, then the exact scan answers (mutation tests of pgvector_store). The answer
is the same however often the index was asked, so PostgreSQL's count of scans of the HNSW index tells."""

from __future__ import annotations

from typing import Any

import numpy as np

from ragloom.testing import make_chunks
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig

DIM = 8
E = np.eye(DIM, dtype=np.float32)


def _open(pg: Any, schema: str, name: str) -> PgVectorStore:
    """A store whose connections carry ``application_name`` = ``name`` (to wait for them to exit); the index from the
    first row on, and HNSW for a namespace of any size."""
    dsn = pg.dsn + ("&" if "?" in pg.dsn else "?") + f"application_name={name}"
    config = PgVectorStoreConfig(schema=schema, hnsw_min_chunks=0, pool_min=1, pool_max=1, vacuum_after_rows=0, keyword=False)
    return PgVectorStore(config, dsn=dsn)


def _close(pg: Any, store: PgVectorStore, name: str) -> None:
    """Close ``store`` and wait for its backends to exit: a backend reports its scan counts as it exits."""
    store.close()
    for _ in range(100_000):  # until they have exited, not for a length of time
        if not pg.execute("SELECT 1 FROM pg_stat_activity WHERE application_name = %s", [name]):
            return


def _hnsw_scans(pg: Any, schema: str) -> int:
    """Scans of the HNSW index by the backends that exited so far."""
    [(scans,)] = pg.execute(
        "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE schemaname = %s AND indexrelname = 'chunks_hnsw'", [schema]
    )
    return int(scans)


def _write(store: PgVectorStore, namespace: str, source: str, vectors: np.ndarray) -> list[str]:
    chunks = make_chunks(source, len(vectors))
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, vectors)
        stage.commit()
    return [c.id for c in chunks]


def _fill(pg: Any, schema: str) -> tuple[list[str], list[str]]:
    """"zeros": 3 chunks of zero vectors, which the cosine HNSW index leaves out (pgvector indexes no zero vector
    for cosine distance); "decoy": one chunk, E[0] itself; "near": 3 chunks, the nearest to E[0] at cosine 0.6."""
    store = _open(pg, schema, "fill")
    zeros = _write(store, "zeros", "/z.md", np.zeros((3, DIM), dtype=np.float32))
    _write(store, "decoy", "/d.md", E[:1])
    near = _write(store, "near", "/n.md", np.stack([0.6 * E[0] + 0.8 * E[1], E[2], E[3]]))
    _close(pg, store, "fill")
    return zeros, near


def _search(pg: Any, schema: str, name: str, namespace: str, ef_search: int) -> tuple[list[str], int]:
    """The chunk ids of ``namespace``'s top 1 for E[0], and how many scans of the HNSW index that took."""
    before = _hnsw_scans(pg, schema)  # every earlier store closed, its backends gone
    store = _open(pg, schema, name)
    assert store.plan(namespace) == "hnsw"
    found = [r.chunk_id for r in store.search(namespace, E[0], top_k=1, ef_search=ef_search)]
    _close(pg, store, name)
    return found, _hnsw_scans(pg, schema) - before


def test_ef_search_grows_fourfold_up_to_1000_then_the_exact_scan_answers(pg: Any, pg_schema: str) -> None:
    """No chunk of "zeros" is in the index: every pass comes back empty. From ef_search 10 the index is asked at
    10, 40, 160, 640 and 1000 (2560, capped); from 1000 once: 1000 is the last try."""
    zeros, _ = _fill(pg, pg_schema)
    found, scans = _search(pg, pg_schema, "from10", "zeros", ef_search=10)
    assert found == zeros[:1] and scans == 5  # the exact scan answers (zero vectors: no score orders them, row order does)
    found, scans = _search(pg, pg_schema, "from1000", "zeros", ef_search=1000)
    assert found == zeros[:1] and scans == 1
    found, scans = _search(pg, pg_schema, "from250", "zeros", ef_search=250)
    assert found == zeros[:1] and scans == 2  # 250, then 1000


def test_ef_search_1_asks_the_index_for_one_candidate(pg: Any, pg_schema: str) -> None:
    """At ef_search 1 the index gives its single nearest candidate, the decoy of another namespace: the search
    asks again at 4 and finds "near"'s best chunk; at ef_search 2 the first answer already holds it."""
    _, near = _fill(pg, pg_schema)
    found, scans = _search(pg, pg_schema, "ef1", "near", ef_search=1)
    assert found == near[:1] and scans == 2
    found, scans = _search(pg, pg_schema, "ef2", "near", ef_search=2)
    assert found == near[:1] and scans == 1

"""Small write helpers shared by the DuckDB store's mutation tests: seeded vectors and a source committed in one session."""

from __future__ import annotations

import numpy as np

from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore

NS = "ns"
DIM = 4


def seeded_vectors(count: int, seed: int, dim: int = DIM) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((count, dim)).astype(np.float32)


def commit_source(store: DuckDBStore, source: str, count: int, seed: int, *, namespace: str = NS, **kwargs: object) -> list:
    """``count`` chunks of ``source`` (``make_chunks`` options in ``kwargs``) written and committed; the chunks."""
    chunks = make_chunks(source, count, **kwargs)  # type: ignore[arg-type]
    with store.session(namespace) as session:
        stage = session.stage(source)
        stage.write(chunks, seeded_vectors(len(chunks), seed))
        stage.commit()
    return chunks

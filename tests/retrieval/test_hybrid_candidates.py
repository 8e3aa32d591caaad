"""The stores' one-call hybrid path (``hybrid_candidates``) returns exactly what two searches and the fusion of their Results do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragloom import Document, Pipeline
from ragloom.plugin import BuildContext
from ragloom.retrievers.hybrid import HybridRetriever

WORDS = "zebra stripe paint light crossing river stone bridge lamp reset factory battery charge cable".split()
QUERIES = ["zebra crossing", "reset the lamp", "battery cable charge", "river stone bridge light", "quokka", "the of"]
OPTIONS: list[dict[str, Any]] = [
    {},
    {"candidates": 5},
    {"mode": "convex"},
    {"mode": "rrf"},
    {"weights": {"bm25": 1, "vector": 0}},
    {"weights": {"bm25": 0, "vector": 1}},
    {"threshold": 0.3},
]


class _TwoSearches:
    """The store seen without ``hybrid_candidates`` (every other attribute passed through)."""

    def __init__(self, store: Any):
        self._store = store

    def __getattr__(self, name: str) -> Any:
        if name == "hybrid_candidates":
            raise AttributeError(name)
        return getattr(self._store, name)


def _pipeline(store: str, tmp_path: Path) -> Pipeline:
    options = {"path": str(tmp_path / "h.duckdb")} if store == "duckdb" else {}
    pipeline = Pipeline.builder().chunker("recursive", size=10_000).store(store, **options).build()
    docs = [(f"d{i}", " ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 5))) for i in range(60)]
    docs += [("twin-a", "zebra crossing"), ("twin-b", "zebra crossing")]  # equal scores on both sides: ties
    pipeline.ingest_documents([Document(id=doc_id, text=text, source=f"{doc_id}.txt", metadata={"n": i}) for i, (doc_id, text) in enumerate(docs)])
    return pipeline


def _rows(results: list[Any]) -> list[tuple[Any, ...]]:
    return [(r.chunk_id, r.score, r.text, r.source, r.span, r.tags, sorted(r.metadata.items())) for r in results]


@pytest.mark.parametrize("store", ["memory", "duckdb"])
def test_one_call_path_equals_two_searches(store: str, tmp_path: Path) -> None:
    pipeline = _pipeline(store, tmp_path)
    try:
        assert hasattr(pipeline.store, "hybrid_candidates")
        context = BuildContext(registry=pipeline.registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store)
        for options in OPTIONS:
            fast = context.build("retriever", "hybrid", options)
            assert isinstance(fast, HybridRetriever)
            slow = HybridRetriever(fast.config, store=_TwoSearches(pipeline.store), embedder=pipeline.embedder, namespace=pipeline.namespace)  # type: ignore[arg-type]
            slow.keyword = slow.store  # type: ignore[assignment]
            for query in QUERIES:
                for kwargs in ({"top_k": 4}, {"top_k": 30}, {"top_k": 6, "filter": {"n": {"$gte": 20}}}):
                    got, expected = fast.retrieve(query, **kwargs), slow.retrieve(query, **kwargs)
                    assert _rows(got) == _rows(expected), (options, query, kwargs)
            # the results' metadata belong to each result: changing one changes no later query
            first = fast.retrieve("zebra crossing", top_k=3)
            if first:
                first[0].metadata["changed"] = True
                assert "changed" not in fast.retrieve("zebra crossing", top_k=3)[0].metadata
    finally:
        pipeline.close()

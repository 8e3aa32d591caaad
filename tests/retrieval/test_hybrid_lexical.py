"""``hybrid`` (mode "auto") with a vector member that tells nothing beyond the keywords: exactly the keyword order, ties included."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragloom import Document, Pipeline, Registry
from ragloom.embedders.hashing import HashEmbedder
from ragloom.plugins import BuildContext
from ragloom.retrievers import fusion
from ragloom.retrievers.hybrid import HybridConfig, HybridRetriever
from ragloom.stores.memory import MemoryStore

from .helpers import NS, TableEmbedder, commit

TEXTS = [
    "The lamp resets to factory settings when the power button is held for ten seconds.",
    "The lamp resets to factory settings when the power button is held for ten seconds.",  # a tie in every BM25 ranking
    "Factory reset: hold power. Settings return to their defaults; the lamp blinks twice.",
    "Pairing the lamp with the hub: press the button on the hub, then the lamp's power button.",
    "Brightness and colour temperature are set in the app; the lamp keeps them after a reset.",
    "The hub needs a 2.4 GHz network; resets of the hub do not reset the lamps paired with it.",
    "Cleaning: wipe the lamp with a dry cloth. Do not use solvents on the diffuser.",
    "Warranty: two years from purchase; a factory reset does not void it.",
    "Power consumption in standby is below half a watt; the button light can be turned off.",
    "Settings sync across lamps in one room; a reset lamp leaves the room until paired again.",
    "Cleaning the hub: unplug it first; the hub's settings survive a power cut.",
    "Holding the button for three seconds switches the lamp between warm and cold light.",
]
QUERIES = [
    "reset the lamp to factory settings",
    "hold the power button",
    "hub settings after a power cut",
    "cleaning the lamp",
    "warranty after reset",
    "pairing lamps in a room",
    "button light",
]


class NotLexicalHash(HashEmbedder):
    """The hash embedder, not declaring itself lexical: its cosines are fused like any embedder's."""

    lexical = False


def _pipeline(tmp_path: Path, store: str, embedder: HashEmbedder) -> Pipeline:
    options = {"path": str(tmp_path / f"{store}.duckdb")} if store == "duckdb" else {}
    pipeline = Pipeline.builder(registry=Registry()).namespace(NS).chunker("recursive", size=100_000).embedder(embedder).store(store, **options).build()
    pipeline.ingest_documents([Document(id=f"d{i}", text=text, source=f"/doc{i}.txt") for i, text in enumerate(TEXTS)])
    return pipeline


def _ids(pipeline: Pipeline, name: str, query: str, top_k: int) -> list[str]:
    context = BuildContext(registry=pipeline.registry, namespace=pipeline.namespace, embedder=pipeline.embedder, store=pipeline.store)
    return [r.document_id for r in context.build("retriever", name, {}).retrieve(query, top_k=top_k)]


@pytest.mark.parametrize("store", ["memory", "duckdb"])
def test_hybrid_with_the_hash_embedder_returns_exactly_the_bm25_order(tmp_path: Path, store: str) -> None:
    pipeline = _pipeline(tmp_path, store, HashEmbedder())
    try:
        for query in QUERIES:
            for top_k in (1, 3, len(TEXTS)):
                keyword = _ids(pipeline, "bm25", query, top_k)
                hybrid = _ids(pipeline, "hybrid", query, top_k)
                # BM25's whole list, in its order (the two identical texts tie: same order too); after it,
                # only what the vector member alone found
                assert hybrid[: len(keyword)] == keyword, query
                assert len(hybrid) == top_k
    finally:
        pipeline.close()


def test_the_same_embedder_not_declared_lexical_is_fused(tmp_path: Path) -> None:
    """The corpus and queries above tell the rule apart: fusing the hash cosines reorders some query's BM25 list."""
    pipeline = _pipeline(tmp_path, "memory", NotLexicalHash())
    try:
        differ = [q for q in QUERIES if _ids(pipeline, "hybrid", q, len(TEXTS))[:5] != _ids(pipeline, "bm25", q, len(TEXTS))[:5]]
        assert differ
    finally:
        pipeline.close()


def test_lexical_weights_and_metadata() -> None:
    assert fusion.lexical(HashEmbedder()) and not fusion.lexical(NotLexicalHash()) and not fusion.lexical(object())
    one = fusion.keyword_values([5.0, 2.0], 10.0)
    cos = fusion.vector_values([0.9, 0.1])
    assert fusion.query_weights(one, 0.0, cos, 0.1, prior=(0.5, 0.5), sharpness=1.0, vector_informative=False) == (1.0, 0.0)
    # with no prior weight on the keyword member, a lexical vector member is all there is
    assert fusion.query_weights(one, 0.0, cos, 0.1, prior=(0.0, 1.0), sharpness=1.0, vector_informative=False) == (0.0, 1.0)


def test_a_vector_member_that_separates_nothing_gives_the_keyword_order_ties_included() -> None:
    """Every chunk has the same vector: the vector weight is 0 and the order is BM25's, even where BM25 ties."""
    store = MemoryStore()
    texts = ["red apple pie", "green apple tart", "red apple pie", "apple", "pear crumble", "red wine"]
    commit(store, "/a", texts, [[1.0, 0.0]] * len(texts))
    retriever = HybridRetriever(HybridConfig(), store=store, embedder=TableEmbedder({}, [1.0, 0.0]), namespace=NS)
    for query in ("red apple", "apple", "red pie", "pear"):
        keyword = [r.chunk_id for r in store.keyword_search(NS, query, top_k=10)]
        fused = retriever.retrieve(query, top_k=len(texts))
        assert [r.chunk_id for r in fused][: len(keyword)] == keyword, query
        assert fused[0].metadata["vector_weight"] == 0.0
        assert [r.score for r in fused] == sorted((r.score for r in fused), reverse=True)


def test_a_chunk_listed_twice_by_a_member_is_fused_once_at_its_best_place() -> None:
    from ragloom.types import Result

    def hit(cid: str, score: float) -> Result:
        return Result(chunk_id=cid, document_id=cid, text=cid, score=score, source=f"/{cid}")

    retriever = HybridRetriever(HybridConfig(mode="rrf"), store=MemoryStore(), embedder=TableEmbedder({}, [1, 0]), namespace=NS)
    fused = retriever.fuse([hit("a", 3.0), hit("b", 2.0), hit("a", 1.0)], [hit("b", 0.9), hit("b", 0.8), hit("c", 0.1)])
    assert sorted(r.chunk_id for r in fused) == ["a", "b", "c"]
    b = next(r for r in fused if r.chunk_id == "b")
    assert (b.metadata["vector_rank"], b.metadata["keyword_rank"]) == (1, 2)

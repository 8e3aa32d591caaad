"""bm25, hybrid and mmr retrievers on real stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import Pipeline
from ragloom.config import PipelineConfig
from ragloom.errors import ConfigError
from ragloom.plugins import BuildContext, Registry
from ragloom.retrievers.hybrid import HybridConfig, HybridRetriever, HybridWeights
from ragloom.retrievers.mmr import MMRConfig, MMRRetriever, mmr_select
from ragloom.retrievers.similarity import SimilarityConfig, SimilarityRetriever
from ragloom.stores.memory import MemoryStore

from .helpers import NS, TableEmbedder, VectorOnlyStore, commit


def _pipeline(corpus: Path, retriever: dict) -> Pipeline:
    config = PipelineConfig.from_dict({"chunker": {"size": 400}, "retriever": retriever}, base_dir=corpus.parent)
    pipeline = Pipeline.from_config(config)
    pipeline.ingest("corpus")
    return pipeline


# ---------------------------------------------------------------------- bm25


def test_bm25_retriever_finds_keywords_and_honours_options(corpus: Path) -> None:
    pipeline = _pipeline(corpus, {"type": "bm25", "top_k": 3})
    results = pipeline.query("warranty claim")
    assert 0 < len(results) <= 3
    assert results[0].source.endswith("warranty.txt")
    assert all("warrant" in r.text.lower() or "claim" in r.text.lower() for r in results)
    assert len(pipeline.query("lamp", top_k=7)) == 7
    cutoff = results[0].score - 1e-9
    assert [r.chunk_id for r in pipeline.query("warranty claim", threshold=cutoff)] == [results[0].chunk_id]
    faq = str(corpus / "faq.md")
    assert {r.source for r in pipeline.query("lamp", top_k=10, filter={"source": faq})} == {faq}


def test_bm25_follows_reingest_and_removal(corpus: Path) -> None:
    pipeline = _pipeline(corpus, {"type": "bm25", "top_k": 5})
    target = corpus / "warranty.txt"
    assert pipeline.query("warranty")[0].source == str(target)
    target.write_text("Nothing about coverage here: zanzibar quokka.", encoding="utf-8")
    pipeline.ingest("corpus")
    assert all(r.source != str(target) for r in pipeline.query("warranty", top_k=50))
    assert [r.source for r in pipeline.query("quokka")] == [str(target)]
    pipeline.remove_source(target)
    assert pipeline.query("quokka zanzibar") == []
    target.unlink()
    (corpus / "faq.md").unlink()
    pipeline.ingest("corpus")  # vanished files are removed
    assert all(not r.source.endswith("faq.md") for r in pipeline.query("lamp", top_k=100))


def test_keyword_retrievers_need_keyword_search() -> None:
    context = BuildContext(registry=Registry(), store=VectorOnlyStore(), embedder=TableEmbedder({}, [1.0, 0.0]))
    for name in ("bm25", "hybrid"):
        with pytest.raises(ConfigError, match="keyword_search"):
            context.build("retriever", name)


# ---------------------------------------------------------------------- hybrid


def _hybrid_store() -> tuple[MemoryStore, TableEmbedder, list]:
    store = MemoryStore()
    a = commit(store, "/a.md", ["alpha particles and beta rays"], [[1, 0, 0]], metadata={"kind": "physics"})
    b = commit(store, "/b.md", ["zebra stripes confuse flies"], [[0, 1, 0]], metadata={"kind": "animal"}, tags=("zoo",))
    c = commit(store, "/c.md", ["gamma radiation and zebra crossings"], [[0.9, 0.1, 0]], metadata={"kind": "mixed"})
    embedder = TableEmbedder({}, default=[1, 0, 0])  # every query points at /a.md
    return store, embedder, [a[0], b[0], c[0]]


def test_hybrid_keyword_only_hit_carries_chunk_document_and_metadata() -> None:
    store, embedder, (a, b, c) = _hybrid_store()
    config = HybridConfig(mode="convex", candidates=1, top_k=1, weights=HybridWeights(bm25=0.6, vector=0.4))
    retriever = HybridRetriever(config, store=store, embedder=embedder, namespace=NS)
    [hit] = retriever.retrieve("zebra stripes")  # the vector side only finds /a.md
    assert hit.chunk_id == b.id
    assert hit.metadata["vector_score"] is None and hit.metadata["keyword_score"] > 0
    assert hit.metadata["kind"] == "animal" and hit.tags == ("zoo",)
    assert (hit.document_id, hit.source, hit.text, hit.span) == (b.document_id, "/b.md", b.text, (b.start, b.end))
    config = HybridConfig(mode="convex", candidates=1, top_k=1, weights=HybridWeights(bm25=0.4, vector=0.6))
    [vector_only] = HybridRetriever(config, store=store, embedder=embedder, namespace=NS).retrieve("zebra stripes")
    assert vector_only.chunk_id == a.id
    assert vector_only.metadata["keyword_score"] is None and vector_only.metadata["vector_score"] == pytest.approx(1.0)


def test_hybrid_rrf_scores_are_weighted_reciprocal_ranks() -> None:
    store, embedder, (a, b, c) = _hybrid_store()
    config = HybridConfig(mode="rrf", rrf_k=10, weights=HybridWeights(bm25=0.3, vector=0.7), top_k=3)
    results = HybridRetriever(config, store=store, embedder=embedder, namespace=NS).retrieve("zebra")
    for r in results:
        expected = 0.0
        if r.metadata["keyword_rank"] is not None:
            expected += 0.3 / (10 + r.metadata["keyword_rank"])
        if r.metadata["vector_rank"] is not None:
            expected += 0.7 / (10 + r.metadata["vector_rank"])
        assert r.score == pytest.approx(expected)
    assert [r.chunk_id for r in results][0] == c.id  # found by both sides
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_hybrid_rrf_k_defaults_to_60() -> None:
    store, embedder, _ = _hybrid_store()
    retriever = HybridRetriever(HybridConfig(mode="rrf"), store=store, embedder=embedder, namespace=NS)
    for r in retriever.retrieve("zebra"):
        ranks = (r.metadata["keyword_rank"], r.metadata["vector_rank"])
        assert r.score == pytest.approx(sum(0.5 / (60 + rank) for rank in ranks if rank is not None))


def test_hybrid_convex_mode_normalises_each_side() -> None:
    store, embedder, (a, b, c) = _hybrid_store()
    config = HybridConfig(mode="convex", weights=HybridWeights(bm25=1.0, vector=0.0), top_k=3)
    results = HybridRetriever(config, store=store, embedder=embedder, namespace=NS).retrieve("zebra stripes")
    assert results[0].chunk_id == b.id and results[0].score == pytest.approx(1.0)
    assert results[-1].score == pytest.approx(0.0)
    assert results[0].metadata["vector_score"] is None  # the vector side was not asked (weight 0)


def test_hybrid_filter_threshold_and_toml(corpus: Path) -> None:
    pipeline = _pipeline(corpus, {"type": "hybrid", "top_k": 4, "weights": {"bm25": 0.4, "vector": 0.6}, "filter": {"source": {"$ne": "x"}}})
    results = pipeline.query("reset the lamp to factory settings")
    assert len(results) == 4 and all("keyword_score" in r.metadata and "vector_score" in r.metadata for r in results)
    wifi = str(corpus / "wifi-setup.md")
    assert {r.source for r in pipeline.query("lamp", filter={"source": wifi})} == {wifi}
    assert pipeline.query("lamp", threshold=1.5) == []  # above any fused score
    with pytest.raises(ConfigError, match="bm25"):
        PipelineConfig.from_dict({"retriever": {"type": "hybrid", "weights": {"bm2": 1}}})
    with pytest.raises(ConfigError, match="mode"):
        PipelineConfig.from_dict({"retriever": {"type": "hybrid", "mode": "max"}})


# ---------------------------------------------------------------------- mmr


def test_mmr_select_extremes() -> None:
    vectors = np.asarray([[1, 0], [1, 0], [0, 1]], dtype=np.float64)
    relevance = np.asarray([0.9, 0.89, 0.5])
    assert [i for i, _ in mmr_select(relevance, vectors, 3, 1.0)] == [0, 1, 2]
    assert [i for i, _ in mmr_select(relevance, vectors, 2, 0.5)] == [0, 2]  # the duplicate loses
    picked = mmr_select(relevance, vectors, 2, 0.5)
    assert picked[1][1] == pytest.approx(0.5 * 0.5 - 0.5 * 0.0)


def test_mmr_lambda_one_equals_similarity_order(corpus: Path) -> None:
    pipeline = _pipeline(corpus, {"type": "mmr", "top_k": 6, "lambda": 1.0, "fetch_k": 20})
    similarity = SimilarityRetriever(SimilarityConfig(top_k=6), store=pipeline.store, embedder=pipeline.embedder, namespace=pipeline.namespace)
    for query in ("how do I reset the lamp", "battery life", "shipping costs"):
        mmr = pipeline.query(query)
        plain = similarity.retrieve(query)
        assert [r.chunk_id for r in mmr] == [r.chunk_id for r in plain]
        assert [r.metadata["original_score"] for r in mmr] == pytest.approx([r.score for r in plain])
        assert [r.score for r in mmr] == pytest.approx([r.score for r in plain])


def test_mmr_diversifies_and_per_query_override() -> None:
    store = MemoryStore()
    texts = ["lamp one", "lamp one copy", "lamp two", "other"]
    vectors = [[1, 0.8, 0], [1, 0.79, 0], [0.75, 1, 0], [0, 0, 1]]
    chunks = commit(store, "/a.md", texts, vectors)
    embedder = TableEmbedder({}, default=[1, 1, 0])
    retriever = MMRRetriever(MMRConfig(top_k=2, fetch_k=4, lambda_mult=0.5), store=store, embedder=embedder, namespace=NS)
    diverse = retriever.retrieve("q")
    assert [r.chunk_id for r in diverse] == [chunks[0].id, chunks[2].id]
    assert diverse[0].metadata["original_score"] > diverse[1].metadata["original_score"]
    relevant = retriever.retrieve("q", lambda_mult=1.0)
    assert [r.chunk_id for r in relevant] == [chunks[0].id, chunks[1].id]
    assert retriever.retrieve("q", threshold=0.9, top_k=4) and all(
        r.metadata["original_score"] >= 0.9 for r in retriever.retrieve("q", threshold=0.9, top_k=4)
    )
    with pytest.raises(ConfigError):
        retriever.retrieve("q", lambda_mult=1.5)


def test_mmr_fetches_three_times_top_k_by_default() -> None:
    class Recording(VectorOnlyStore):
        capabilities = MemoryStore.capabilities

        def __init__(self, inner: MemoryStore):
            super().__init__(inner)
            self.asked: list[int] = []

        def search(self, namespace: str, vector: np.ndarray, *, top_k: int, filter: object = None) -> list:
            self.asked.append(top_k)
            return self._inner.search(namespace, vector, top_k=top_k, filter=filter)

        def get_vectors(self, namespace: str, chunk_ids: list) -> np.ndarray:
            return self._inner.get_vectors(namespace, chunk_ids)

    inner = MemoryStore()
    commit(inner, "/a.md", ["one", "two", "three"], [[1, 0], [0, 1], [1, 1]])
    store = Recording(inner)
    retriever = MMRRetriever(MMRConfig(top_k=2), store=store, embedder=TableEmbedder({}, default=[1, 0]), namespace=NS)
    retriever.retrieve("q")
    retriever.retrieve("q", top_k=5)
    assert store.asked == [6, 15]


def test_mmr_re_embeds_when_the_store_cannot_return_vectors() -> None:
    inner = MemoryStore()
    texts = ["lamp one", "lamp one copy", "lamp two", "other"]
    table = {"lamp one": [1, 0.8, 0], "lamp one copy": [1, 0.79, 0], "lamp two": [0.75, 1, 0], "other": [0, 0, 1]}
    commit(inner, "/a.md", texts, list(table.values()))
    embedder = TableEmbedder(table, default=[1, 1, 0])
    config = MMRConfig(top_k=3, fetch_k=4, lambda_mult=0.5)
    with_vectors = MMRRetriever(config, store=inner, embedder=embedder, namespace=NS).retrieve("q")
    assert embedder.embedded == []
    re_embedded = MMRRetriever(config, store=VectorOnlyStore(inner), embedder=embedder, namespace=NS).retrieve("q")
    assert sorted(embedder.embedded) == sorted(texts)
    assert [r.chunk_id for r in re_embedded] == [r.chunk_id for r in with_vectors]
    assert [r.score for r in re_embedded] == pytest.approx([r.score for r in with_vectors], abs=1e-5)


def test_mmr_config_spelling() -> None:
    registry = Registry()
    assert registry.structure_config("retriever", "mmr", {"lambda": 0.2}).lambda_mult == 0.2
    assert registry.structure_config("retriever", "mmr", {"lambda_mult": 0.7}).lambda_mult == 0.7
    with pytest.raises(ConfigError, match="lambda"):
        registry.structure_config("retriever", "mmr", {"lambda": 2.0})
    with pytest.raises(ConfigError, match="fetch_k"):
        registry.structure_config("retriever", "mmr", {"fetch_k": 0})

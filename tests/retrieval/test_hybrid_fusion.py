"""Query-adaptive hybrid fusion (mode "auto"): absolute scores, per-query weights, abstention."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom import Pipeline, PipelineConfig
from ragloom.config import tomllib
from ragloom.keyword import BM25Index
from ragloom.retrievers import fusion
from ragloom.retrievers.hybrid import RELEVANCE_THRESHOLD, TAIL_RATIO, HybridConfig, HybridRetriever, keyword_ceiling
from ragloom.stores.memory import MemoryStore

from .helpers import NS, TableEmbedder, commit

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


def _quickstart(tmp_path: Path) -> Pipeline:
    data = tomllib.loads((QUICKSTART / "ragloom.toml").read_text(encoding="utf-8"))
    data["store"]["path"] = str(tmp_path / "quickstart.duckdb")
    pipeline = Pipeline.from_config(PipelineConfig.from_dict(data, base_dir=QUICKSTART))
    pipeline.ingest()
    return pipeline


def test_quickstart_absent_topics_return_nothing_at_the_documented_threshold(tmp_path: Path) -> None:
    pipeline = _quickstart(tmp_path)
    try:
        for query in ("flurble grommet xyzzy", "Who won the football World Cup in 1998?", "How do I make crispy roast potatoes?"):
            assert pipeline.query(query) != []  # without a threshold something always comes back ...
            assert pipeline.query(query, threshold=RELEVANCE_THRESHOLD) == []  # ... but nothing relevant
        questions = re.findall(r"^- (.+?) \((\S+)\)$", (QUICKSTART / "QUERIES.md").read_text(encoding="utf-8"), re.MULTILINE)
        assert len(questions) == 8
        # without a threshold every example question finds its own answer in the top 3
        for question, answer in questions:
            assert answer in [Path(hit.source).name for hit in pipeline.query(question, top_k=3)], question
        # at the default threshold at least 6 of the 8 keep their own answer first (with the hash embedder
        # one is abstained on and BM25's order, which hybrid keeps, puts another answer second)
        right = [answer for question, answer in questions if [Path(h.source).name for h in pipeline.query(question, top_k=1, threshold=RELEVANCE_THRESHOLD)] == [answer]]
        assert len(right) >= len(questions) - 2, right
    finally:
        pipeline.close()


def test_ceiling_bounds_scores_and_counts_absent_terms() -> None:
    index = BM25Index()
    index.add(["a", "b", "c"], ["zebra stripes zebra", "zebra crossing lights", "stripes of paint and light"])
    for query in ("zebra", "zebra stripes", "striped zebras light"):
        ceiling = index.ceiling(query)
        assert all(0 < score <= ceiling + 1e-9 for _, score in index.search(query, top_k=3))
    single = index.ceiling("zebra")
    assert index.ceiling("zebra zebra") == pytest.approx(2 * single)  # a repeated term counts twice, as in scoring
    # a word no chunk contains raises the ceiling (as much as the rarest term), so partial matches score lower
    assert index.ceiling("zebra quokka") > single
    assert index.ceiling("the of and") == 0.0  # stop words only: nothing to match
    assert BM25Index().ceiling("zebra") == 0.0


def test_store_ceiling_and_the_keyword_search_fallback_agree() -> None:
    store = MemoryStore()
    commit(store, "/a.md", ["zebra stripes confuse flies"], [[1, 0]])
    commit(store, "/b.md", ["gamma radiation and zebra crossings"], [[0, 1]])

    class KeywordOnly:  # the real store, without its keyword_ceiling shortcut
        def __init__(self, inner: MemoryStore):
            self.keyword_search = inner.keyword_search

    for query in ("zebra stripes", "gamma zebra", "flies"):
        assert keyword_ceiling(KeywordOnly(store), NS, query) == pytest.approx(store.keyword_ceiling(NS, query))


def test_weights_follow_each_members_separation() -> None:
    decisive = np.array([0.9, 0.3, 0.25, 0.2])
    flat = np.array([0.42, 0.41, 0.40, 0.40])
    w_kw, w_vec = fusion.query_weights(decisive, 0.2, flat, 0.40, prior=(0.5, 0.5), sharpness=1.0)
    assert w_kw + w_vec == pytest.approx(1.0) and w_kw > 0.95
    w_kw, w_vec = fusion.query_weights(flat, 0.40, decisive, 0.2, prior=(0.5, 0.5), sharpness=1.0)
    assert w_vec > 0.95
    assert fusion.query_weights(decisive, 0.2, flat, 0.40, prior=(0.5, 0.5), sharpness=0.0) == (0.5, 0.5)
    assert fusion.query_weights(np.array([]), 0.0, np.array([]), 0.0, prior=(0.3, 0.1), sharpness=1.0) == pytest.approx((0.75, 0.25))


def test_auto_scores_are_on_the_members_absolute_scale() -> None:
    store = MemoryStore()
    a = commit(store, "/a.md", ["zebra stripes confuse flies"], [[1, 0, 0]])[0]
    commit(store, "/b.md", ["gamma radiation and zebra crossings"], [[0, 1, 0]])
    commit(store, "/c.md", ["alpha particles"], [[0, 0, 1]])
    retriever = HybridRetriever(HybridConfig(top_k=3), store=store, embedder=TableEmbedder({}, [0.8, 0.6, 0]), namespace=NS)
    results: list[Any] = retriever.retrieve("zebra stripes")
    assert results[0].chunk_id == a.id
    for r in results:
        kw = (r.metadata["keyword_score"] or 0.0) / store.keyword_ceiling(NS, "zebra stripes")
        vec = max(r.metadata["vector_score"] or 0.0, 0.0)
        expected = r.metadata["keyword_weight"] * kw + r.metadata["vector_weight"] * vec
        assert r.score == pytest.approx(expected) and 0.0 <= r.score <= 1.0
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_fuse_builds_only_the_returned_results_in_score_then_first_seen_order() -> None:
    """The array fusion equals fusion.fuse_values; ties keep first-seen order (vector list, then keyword list)."""
    from ragloom.types import Result

    def hit(cid: str, score: float) -> Result:
        return Result(chunk_id=cid, document_id=cid, text=cid, score=score, source=f"/{cid}")

    vector = [hit("v1", 0.9), hit("both", 0.5), hit("v2", 0.5), hit("v3", 0.1)]
    keyword = [hit("k1", 8.0), hit("both", 4.0), hit("k2", 1.0)]
    retriever = HybridRetriever(HybridConfig(), store=MemoryStore(), embedder=TableEmbedder({}, [1, 0, 0]), namespace=NS)
    fused = retriever.fuse(keyword, vector, limit=4, keyword_ceiling=10.0, complete_keyword=True)
    assert len(fused) == 4
    w = (fused[0].metadata["keyword_weight"], fused[0].metadata["vector_weight"])
    kw = fusion.keyword_values([8.0, 4.0, 1.0], 10.0)
    vec = fusion.vector_values([0.9, 0.5, 0.5, 0.1])
    expected = fusion.fuse_values(["k1", "both", "k2"], kw, 0.0, ["v1", "both", "v2", "v3"], vec, 0.1, w)
    first_seen = ["v1", "both", "v2", "v3", "k1", "k2"]
    order = sorted(expected, key=lambda cid: (-expected[cid], first_seen.index(cid)))[:4]
    assert [r.chunk_id for r in fused] == order
    assert [r.score for r in fused] == pytest.approx([expected[cid] for cid in order])
    both = next(r for r in fused if r.chunk_id == "both")
    assert (both.metadata["keyword_rank"], both.metadata["vector_rank"]) == (2, 2)
    assert (both.metadata["keyword_score"], both.metadata["vector_score"]) == (4.0, 0.5)
    only_vector = next(r for r in fused if r.chunk_id == "v1")
    assert only_vector.metadata["keyword_score"] is None and only_vector.metadata["keyword_rank"] is None


def _three_documents() -> tuple[MemoryStore, list[str]]:
    store = MemoryStore()
    ids = [
        commit(store, "/a.md", ["zebra stripes confuse flies"], [[1, 0, 0, 0]])[0].id,
        commit(store, "/b.md", ["gamma radiation and zebra crossings"], [[0, 1, 0, 0]])[0].id,
        commit(store, "/c.md", ["alpha particles"], [[0, 0, 1, 0]])[0].id,
    ]
    return store, ids


def test_threshold_keeps_an_answered_querys_weaker_results_and_drops_its_tail() -> None:
    """Best cosine 0.9 >= threshold: the query is answered; results are cut at TAIL_RATIO x threshold, not at threshold."""
    store, (a, b, c) = _three_documents()
    query = np.array([0.9, 0.3, 0, 0.3])
    retriever = HybridRetriever(HybridConfig(top_k=3), store=store, embedder=TableEmbedder({}, query), namespace=NS)
    everything = retriever.retrieve("zebra stripes")
    assert [r.chunk_id for r in everything] == [a, b, c]
    assert all(r.metadata["query_relevance"] == pytest.approx(0.9 / np.linalg.norm(query), abs=1e-6) for r in everything)
    weaker = everything[1]
    assert TAIL_RATIO * RELEVANCE_THRESHOLD <= weaker.score < RELEVANCE_THRESHOLD  # a per-result cut would drop it
    assert everything[2].score < TAIL_RATIO * RELEVANCE_THRESHOLD
    kept = retriever.retrieve("zebra stripes", threshold=RELEVANCE_THRESHOLD)
    assert [r.chunk_id for r in kept] == [a, b]


def test_threshold_abstains_when_the_best_cosine_is_low_even_if_bm25_matches() -> None:
    """Best cosine 0.2 < threshold: nothing, although BM25 matches every query word of one chunk."""
    store, (a, _, _) = _three_documents()
    retriever = HybridRetriever(HybridConfig(top_k=3), store=store, embedder=TableEmbedder({}, [0.2, 0.1, 0, 0.97]), namespace=NS)
    everything = retriever.retrieve("zebra stripes")
    assert everything[0].chunk_id == a and everything[0].metadata["query_relevance"] == pytest.approx(0.2, abs=1e-3)
    assert retriever.retrieve("zebra stripes", threshold=RELEVANCE_THRESHOLD) == []
    assert retriever.retrieve("zebra stripes", threshold=0.15) != []  # a lower threshold answers


def test_query_relevance_is_the_best_cosine_else_the_best_fused_score() -> None:
    assert fusion.query_relevance(np.array([0.4, 0.7, -0.1]), np.array([0.2])) == pytest.approx(0.7)
    assert fusion.query_relevance(np.array([1.2]), np.array([0.2])) == 1.0
    assert fusion.query_relevance(np.array([]), np.array([0.3, 0.6])) == pytest.approx(0.6)
    assert fusion.query_relevance(np.array([]), np.array([])) == 0.0


def test_threshold_cuts_each_result_in_the_fixed_modes() -> None:
    store, _ = _three_documents()
    for mode in ("convex", "rrf"):
        retriever = HybridRetriever(HybridConfig(top_k=3, mode=mode), store=store, embedder=TableEmbedder({}, [0.8, 0.6, 0, 0]), namespace=NS)
        everything = retriever.retrieve("zebra stripes")
        cut = (everything[0].score + everything[-1].score) / 2
        assert retriever.retrieve("zebra stripes", threshold=cut) == [r for r in everything if r.score >= cut]

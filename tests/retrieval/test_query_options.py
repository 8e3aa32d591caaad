"""Per-query retrieval options: candidates, top_k after reranking, retriever options, the CLI and rag_search."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ragloom import ConfigError, Pipeline, Result
from ragloom.cli import main
from ragloom.tools import rag_search_tool

QUERY = "how do I reset the lamp to factory settings"


class Recorder:
    """A reranker instance that records the pool it got and keeps the first ``top_n`` (reversed)."""

    def __init__(self, top_n: int = 3):
        self.top_n = top_n
        self.pools: list[int] = []

    def rerank(self, query: str, results: Sequence[Result], top_n: int | None = None) -> list[Result]:
        self.pools.append(len(results))
        return list(reversed(results))[: top_n or self.top_n]


def _pipeline(corpus: Path, retriever: str = "similarity", **options: Any) -> Pipeline:
    pipeline = (
        Pipeline.builder()
        .base_dir(corpus.parent)
        .embedder("hash", dim=256)
        .chunker("recursive", size=200, overlap=0)
        .retriever(retriever, **options)
        .build()
    )
    pipeline.ingest("corpus")
    return pipeline


def _ids(results: Sequence[Result]) -> list[str]:
    return [r.chunk_id for r in results]


# ---------------------------------------------------------------------- retriever options


def test_mmr_lambda_per_query_without_touching_the_retriever(corpus: Path) -> None:
    pipeline = _pipeline(corpus, "mmr", top_k=5, fetch_k=30, lambda_mult=0.5)
    nearest = pipeline.store.search(pipeline.namespace, pipeline.embedder.embed_query(QUERY), top_k=5)
    relevance_only = pipeline.query(QUERY, lambda_mult=1.0)
    assert _ids(relevance_only) == _ids(nearest)  # lambda 1: plain similarity order
    diverse = pipeline.query(QUERY, lambda_mult=0.0)
    assert _ids(diverse) != _ids(relevance_only)
    assert _ids(pipeline.query(QUERY, options={"lambda": 0.0})) == _ids(diverse)  # the TOML spelling, through options
    assert _ids(pipeline.query(QUERY)) == _ids(pipeline.retriever.retrieve(QUERY))
    assert pipeline.retriever.config.lambda_mult == 0.5  # type: ignore[attr-defined]
    assert sorted(_ids(pipeline.query(QUERY, fetch_k=5, lambda_mult=0.0))) == sorted(_ids(relevance_only))  # fetch_k = top_k: the same five


def test_hybrid_weights_per_query(corpus: Path) -> None:
    pipeline = _pipeline(corpus, "hybrid", top_k=4, mode="rrf")
    keyword_only = pipeline.query(QUERY, weights={"bm25": 1.0, "vector": 0.0})
    vector_only = pipeline.query(QUERY, weights={"bm25": 0.0, "vector": 1.0})
    keyword = pipeline.store.keyword_search(pipeline.namespace, QUERY, top_k=4)  # type: ignore[attr-defined]
    vector = pipeline.store.search(pipeline.namespace, pipeline.embedder.embed_query(QUERY), top_k=4)
    assert _ids(keyword_only) == _ids(keyword) and _ids(vector_only) == _ids(vector)
    assert _ids(keyword_only) != _ids(vector_only)
    with pytest.raises(ConfigError, match="weights"):
        pipeline.query(QUERY, weights={"bm25": 0.0, "vector": 0.0})
    # the hybrid retriever's own 'candidates' (per side) collides with query()'s: it goes through options
    assert len(pipeline.query(QUERY, options={"candidates": 4})) == 4
    with pytest.raises(ConfigError, match="candidates"):
        pipeline.query(QUERY, options={"candidates": 0})


def test_an_option_the_retriever_does_not_know_is_a_config_error_naming_it(corpus: Path) -> None:
    mmr = _pipeline(corpus, "mmr")
    with pytest.raises(ConfigError, match=r"'lambda_mul'.*did you mean 'lambda_mult'"):
        mmr.query(QUERY, lambda_mul=0.3)
    with pytest.raises(ConfigError, match="lambda"):
        mmr.query(QUERY, lambda_mult=2.0)
    with pytest.raises(ConfigError, match="top_k="):
        mmr.query(QUERY, options={"top_k": 3})
    similarity = _pipeline(corpus)
    with pytest.raises(ConfigError, match="'fetch_k'.*similarity"):
        similarity.query(QUERY, fetch_k=10)


class Plain:
    """A retriever without a config object."""

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        return []


def test_a_retriever_without_a_config_takes_no_options(corpus: Path) -> None:
    pipeline = Pipeline.builder().retriever(Plain()).build()
    assert pipeline.query(QUERY) == []
    with pytest.raises(ConfigError, match="'mode'.*takes no per-query options"):
        pipeline.query(QUERY, mode="fast")


# ---------------------------------------------------------------------- candidates and top_k


def test_candidates_is_the_pool_before_reranking_and_top_k_what_is_returned(corpus: Path) -> None:
    recorder = Recorder(top_n=3)
    pipeline = Pipeline.builder().base_dir(corpus.parent).retriever("similarity", top_k=5).reranker(recorder).build()
    pipeline.ingest("corpus")
    assert len(pipeline.query(QUERY)) == 3 and recorder.pools[-1] == 5  # configured: retriever top_k, reranker top_n
    assert len(pipeline.query(QUERY, top_k=2)) == 2 and recorder.pools[-1] == 8  # default pool: 4 x top_k
    assert len(pipeline.query(QUERY, top_k=2, candidates=6)) == 2 and recorder.pools[-1] == 6
    assert len(pipeline.query(QUERY, candidates=7)) == 3 and recorder.pools[-1] == 7
    assert len(pipeline.query(QUERY, top_n=1)) == 1 and recorder.pools[-1] == 4  # top_n: the older spelling of top_k
    assert len(pipeline.query(QUERY, top_k=10, top_n=2)) == 2 and recorder.pools[-1] == 10  # both: top_k the pool, as before
    with pytest.raises(ConfigError, match="candidates.*at least top_k"):
        pipeline.query(QUERY, top_k=5, candidates=3)
    with pytest.raises(ConfigError, match="candidates"):
        pipeline.query(QUERY, candidates=0)
    without = Pipeline.builder().retriever("similarity").build()
    with pytest.raises(ConfigError, match="candidates.*no reranker"):
        without.query(QUERY, candidates=10)


def test_aquery_takes_the_same_options(corpus: Path) -> None:
    pipeline = _pipeline(corpus, "mmr", top_k=5, fetch_k=30)
    recorder = Recorder()
    reranked = Pipeline.builder().base_dir(corpus.parent).retriever("similarity", top_k=5).reranker(recorder).build()
    reranked.ingest("corpus")

    async def run() -> tuple[list[Result], list[Result]]:
        return await pipeline.aquery(QUERY, lambda_mult=1.0), await reranked.aquery(QUERY, top_k=2, candidates=6)

    mmr_results, reranked_results = asyncio.run(run())
    assert _ids(mmr_results) == _ids(pipeline.query(QUERY, lambda_mult=1.0))
    assert len(reranked_results) == 2 and recorder.pools[0] == 6
    with pytest.raises(ConfigError, match="lambda_mul"):
        asyncio.run(pipeline.aquery(QUERY, lambda_mul=1.0))


# ---------------------------------------------------------------------- CLI


def test_cli_query_options(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "ragloom.toml"
    config.write_text(
        f'[store]\ntype = "duckdb"\npath = "{tmp_path / "store.duckdb"}"\n[embedder]\ntype = "hash"\ndim = 256\n'
        '[chunker]\ntype = "recursive"\nsize = 200\noverlap = 0\n[retriever]\ntype = "mmr"\ntop_k = 5\nfetch_k = 30\n',
        encoding="utf-8",
    )
    assert main(["-c", str(config), "ingest", str(corpus)]) == 0
    with Pipeline.from_toml(config) as pipeline:
        expected = [r.source for r in pipeline.query(QUERY, lambda_mult=1.0)]
        default = [r.source for r in pipeline.query(QUERY)]
    assert expected != default
    capsys.readouterr()

    def run(*args: str) -> tuple[int, Any]:
        code = main(["-c", str(config), "query", QUERY, "--json", *args])
        out, err = capsys.readouterr()
        return code, json.loads(out) if code == 0 else err

    code, data = run("--lambda", "1.0")
    assert code == 0 and [r["source"] for r in data["results"]] == expected
    code, data = run("--option", "lambda_mult=1.0")
    assert code == 0 and [r["source"] for r in data["results"]] == expected
    code, err = run("--option", "lamda=1")
    assert code != 0 and "lamda" in err
    code, err = run("--candidates", "10")
    assert code != 0 and "candidates" in err
    code, err = run("--option", "novalue")
    assert code != 0 and "KEY=VALUE" in err


# ---------------------------------------------------------------------- rag_search


def test_rag_search_overrides_and_per_call_options(corpus: Path, tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=256).retriever("mmr", top_k=5, fetch_k=30).build()
    pipeline.ingest(str(corpus / "warranty.txt"), tags=["legal"])
    pipeline.ingest(str(corpus / "faq.md"), tags=["support"])
    tool = rag_search_tool(pipeline, name="search_legal", description="Search the legal texts.", top_k=2, tags=["legal"])
    assert tool.spec()["name"] == "search_legal" and tool.spec()["description"] == "Search the legal texts."
    found = tool({"query": "warranty repair"})
    assert len(found["results"]) == 2 and {r["source"] for r in found["results"]} == {str(corpus / "warranty.txt")}
    assert len(tool({"query": "warranty repair", "top_k": 3})["results"]) == 3  # the model's own top_k wins
    # the fixed tag scope holds even when the model asks for another source
    assert tool({"query": "reset", "filter": {"source": str(corpus / "faq.md")}})["results"] == []
    assert len(rag_search_tool(pipeline)({"query": "warranty repair"})["results"]) == 5  # the pipeline's defaults
    strict = rag_search_tool(pipeline, threshold=2.0)
    assert strict({"query": "warranty repair"})["results"] == []
    legal_faq = rag_search_tool(pipeline, filter={"source": str(corpus / "faq.md")})
    assert {r["source"] for r in legal_faq({"query": "lamp"})["results"]} == {str(corpus / "faq.md")}
    # per-call retriever options, as an object or as a JSON string (OpenAI's strict schema form)
    nearest = rag_search_tool(pipeline, options={"lambda_mult": 1.0})({"query": QUERY})["results"]
    assert [r["citation"] for r in nearest] == [r["citation"] for r in rag_search_tool(pipeline)({"query": QUERY, "options": '{"lambda_mult": 1.0}'})["results"]]
    assert "lambda_mul" in rag_search_tool(pipeline)({"query": QUERY, "options": {"lambda_mul": 1}})["error"]
    with pytest.raises(ConfigError, match="top_k"):
        rag_search_tool(pipeline, top_k=0)
    with pytest.raises(ConfigError, match="tags"):
        rag_search_tool(pipeline, tags=[])


class Broken:
    """A retriever whose backend is down (not a ragloom error: a plain RuntimeError)."""

    def retrieve(self, query: str, *, top_k: int | None = None, threshold: float | None = None, filter: Any = None) -> list[Result]:
        raise RuntimeError("connection to the search backend lost")


def test_rag_search_returns_retrieval_errors_to_the_model() -> None:
    tool = rag_search_tool(Pipeline.builder().retriever(Broken()).build())
    answer = tool({"query": "anything"})
    assert answer == {"error": "retrieval failed: RuntimeError: connection to the search backend lost"}

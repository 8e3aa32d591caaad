"""The async API: same answers and errors as the sync one (the event loop's latency: test_async_latency.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragloom import Pipeline

QUERIES = [
    "factory reset", "warranty period", "battery life", "pairing bluetooth", "firmware update",
    "return policy", "reset password", "shipping time", "water resistance", "charging cable",
]


def _pipeline(tmp_path: Path) -> Pipeline:
    return Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=256).store("memory").build()


def test_fifty_concurrent_aquery_equal_sequential_query(corpus: Path, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    pipeline.ingest(corpus)
    texts = [QUERIES[i % len(QUERIES)] + (" manual" if i >= len(QUERIES) else "") for i in range(50)]
    expected = [pipeline.query(t, top_k=4) for t in texts]

    async def run() -> list:
        return await asyncio.gather(*(pipeline.aquery(t, top_k=4) for t in texts))

    got = asyncio.run(run())
    assert [[(r.chunk_id, r.score) for r in rs] for rs in got] == [[(r.chunk_id, r.score) for r in rs] for rs in expected]
    assert all(got)
    assert pipeline.stats()["queries"] == 100


def test_aremove_source_astats_and_aclose(corpus: Path, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)

    async def run() -> tuple:
        done = await pipeline.aingest(corpus, tags=["kb"])
        tagged = await pipeline.aquery("factory reset", top_k=3, filter={"tags": "kb"})
        assert len(tagged) == 3 and all(r.tags == ("kb",) for r in tagged)  # the options reached ingest and query
        before = await pipeline.astats()
        source = (await asyncio.to_thread(pipeline.sources))[0]
        removed = await pipeline.aremove_source(source)
        after = await pipeline.astats()
        await pipeline.aclose()
        return done, before, removed, after, source

    done, before, removed, after, source = asyncio.run(run())
    assert done.documents == 12 and before["chunks"] == done.chunks
    assert removed > 0 and after["chunks"] == before["chunks"] - removed
    assert source not in pipeline.store.sources(pipeline.namespace)


def test_aquery_errors_are_the_sync_errors(tmp_path: Path) -> None:
    from ragloom.errors import ConfigError, FilterError

    pipeline = _pipeline(tmp_path)
    with pytest.raises(ConfigError, match="non-empty"):
        asyncio.run(pipeline.aquery("  "))
    with pytest.raises(FilterError):
        asyncio.run(pipeline.aquery("x", filter={"a": {"$where": 1}}))


@pytest.mark.parametrize("store", ["memory", "duckdb"])
def test_concurrent_aingest_of_different_folders(tmp_path: Path, store: str) -> None:
    from serve_helpers import write_config

    folders = []
    for n in range(3):
        folder = tmp_path / f"folder{n}"
        folder.mkdir()
        for i in range(12):
            (folder / f"d{i}.md").write_text(f"# D {n} {i}\n\n" + " ".join(f"w{n}x{i}x{j}" for j in range(300)), encoding="utf-8")
        folders.append(folder)
    (tmp_path / "db").mkdir()
    pipeline = Pipeline.from_toml(write_config(tmp_path / "db", store=store))

    async def run() -> list:
        return await asyncio.gather(*(pipeline.aingest(f) for f in folders), *(pipeline.aquery("w1x3x5") for _ in range(6)))

    results = asyncio.run(run())
    assert [r.documents for r in results[:3]] == [12, 12, 12] and all(r.failed == () for r in results[:3])
    chunks = sum(r.chunks for r in results[:3])
    assert pipeline.stats()["sources"] == 36 and pipeline.stats()["chunks"] == chunks
    assert pipeline.query("w1x3x5", top_k=1)[0].source.endswith("folder1/d3.md")
    again = asyncio.run(pipeline.aingest(folders[0]))
    assert again.unchanged == 12 and again.chunks == 0
    pipeline.close()

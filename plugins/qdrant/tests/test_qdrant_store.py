"""The qdrant store beyond the shared contract: plugin wiring, filters, crash recovery, MMR, keyword search."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ragloom import ConfigError, FilterError, Pipeline, PipelineConfig, Registry, StoreError
from ragloom.plugin import Condition, parse_filter
from ragloom.stores.keyword_index import keyword_index_for
from ragloom.stores.memory import MemoryStore
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore
from ragloom_qdrant.filters import translate

CORPUS = Path(__file__).resolve().parents[3] / "examples" / "quickstart" / "corpus"
QUERIES = ["how do I reset the lamp", "warranty and returns", "circadian schedule sunrise", "api token rate limit", "night light brightness"]
NS = "t"


def _pipeline(store: Any, retriever: str = "hybrid", **options: Any) -> Pipeline:
    return (
        Pipeline.builder().store(store).embedder("hash", dim=128).chunker("recursive", size=300, overlap=0).retriever(retriever, **options).build()
    )


def _ranking(results: list[Any]) -> list[tuple[str, float]]:
    return [(r.chunk_id, round(r.score, 5)) for r in results]


def test_plugin_is_discovered() -> None:
    entry = Registry().get("store", "qdrant")
    assert entry.distribution == "ragloom-qdrant"


def test_toml_pipeline_in_local_mode(tmp_path: Path) -> None:
    config = PipelineConfig.from_dict(
        {
            "store": {"type": "qdrant", "path": "kb/qdrant"},
            "embedder": {"type": "hash", "dim": 64},
            "retriever": {"type": "bm25"},
        },
        base_dir=tmp_path,
    )
    with Pipeline.from_config(config) as pipeline:
        pipeline.ingest(CORPUS / "faq.md")
        assert pipeline.query("warranty")
        assert pipeline.stats()["chunks"] == pipeline.store.count("default") > 0
    assert (tmp_path / "kb" / "qdrant").is_dir() and list((tmp_path / "kb" / "qdrant.keyword").glob("*.npz"))


def test_secrets_never_appear_and_an_unreachable_server_is_a_store_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGLOOM_TEST_QDRANT_KEY", "very-secret-key")
    config = PipelineConfig.from_dict(
        {"store": {"type": "qdrant", "url": "http://127.0.0.1:9", "api_key": {"env": "RAGLOOM_TEST_QDRANT_KEY"}, "timeout": 1}, "embedder": {"type": "hash"}}
    )
    with pytest.raises(StoreError) as info:
        Pipeline.from_config(config)
    assert "127.0.0.1:9" in str(info.value) and "very-secret-key" not in str(info.value)
    with pytest.raises(ConfigError, match="secrets are never written"):
        PipelineConfig.from_dict({"store": {"type": "qdrant", "url": "http://x", "api_key": "plain"}, "embedder": {"type": "hash"}})


def test_the_api_key_secret_reaches_the_server_and_never_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A real HTTP server on 127.0.0.1 that records the ``api-key`` header and refuses the request."""
    import http.server
    import threading

    seen: list[str | None] = []

    class Refusing(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            seen.append(self.headers.get("api-key"))
            body = b'{"status": {"error": "forbidden"}}'
            self.send_response(403)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("RAGLOOM_TEST_QDRANT_KEY", "key-from-the-environment")
    try:
        config = PipelineConfig.from_dict(
            {"store": {"type": "qdrant", "url": f"http://127.0.0.1:{server.server_port}", "api_key": {"env": "RAGLOOM_TEST_QDRANT_KEY"}}, "embedder": {"type": "hash"}}
        )
        with pytest.raises(StoreError, match="cannot open") as info:
            Pipeline.from_config(config)
    finally:
        server.shutdown()
        server.server_close()
    assert seen and set(seen) == {"key-from-the-environment"}
    assert "key-from-the-environment" not in str(info.value)


def test_unsupported_operators_are_filter_errors(qdrant_store: Callable[..., QdrantStore]) -> None:
    with pytest.raises(FilterError, match=r"\$regex"):
        translate(Condition("title", "$regex", "^a"))
    store = qdrant_store()
    TestHelpers.commit(store, "/a.md", 2)
    with pytest.raises(FilterError, match=r"\$near"):
        store.search(NS, np.ones(8, dtype=np.float32), top_k=3, filter=Condition("title", "$near", 1))


def test_string_ordering_is_exact_and_combined_with_qdrant_conditions(qdrant_store: Callable[..., QdrantStore]) -> None:
    store = qdrant_store()
    titles = ["apple", "Banana", "cherry", "date", "éclair"]
    with store.session(NS) as session:
        for i, title in enumerate(titles):
            chunks = make_chunks(f"/{i}.md", 1, metadata={"title": title, "n": i})
            stage = session.stage(chunks[0].source)
            stage.write(chunks, np.eye(8, dtype=np.float32)[i : i + 1])
            stage.commit()
    node = parse_filter({"$or": [{"title": {"$gte": "c", "$lt": "e"}}, {"n": {"$gt": 3}}]})
    got = {r.metadata["title"] for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10, filter=node)}
    assert got == {"cherry", "date", "éclair"}
    assert store.delete(NS, parse_filter({"title": {"$lt": "b"}})) == 2  # "apple" and "Banana" (code point order)
    assert {r.metadata["title"] for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)} == {"cherry", "date", "éclair"}


class TestHelpers:
    @staticmethod
    def commit(store: QdrantStore, source: str, count: int, version: int = 1, namespace: str = NS) -> list[Any]:
        texts = [f"{source} version {version} chunk {i}" for i in range(count)]
        chunks = make_chunks(source, count, texts=texts, content_hash=f"v{version}")
        with store.session(namespace) as session:
            stage = session.stage(source)
            stage.write(chunks, np.random.default_rng(version).standard_normal((count, 8)).astype(np.float32))
            stage.commit()
        return chunks


class Crash(Exception):
    """A fault injected into a commit, standing in for a killed process."""


def _open_folder(path: Path, mode: str) -> QdrantStore:
    """Local mode opened by the store (exclusive) or through a client passed in (shared: the ``live`` flag hides stages)."""
    if mode == "exclusive":
        return QdrantStore(path=path)
    from qdrant_client import QdrantClient

    return QdrantStore(client=QdrantClient(path=str(path)))


@pytest.mark.parametrize(
    ("mode", "crash_at"), [("exclusive", "commit point"), ("exclusive", "delete"), ("shared", "commit point"), ("shared", "flip"), ("shared", "delete")]
)
def test_a_crash_during_a_commit_leaves_the_source_old_or_new(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, crash_at: str) -> None:
    path = tmp_path / "qdrant"
    store = _open_folder(path, mode)
    assert store.exclusive is (mode == "exclusive")
    TestHelpers.commit(store, "/a.md", 3, version=1)
    TestHelpers.commit(store, "/b.md", 2, version=1)
    client = store.client
    calls = {"commit point": (client, "upsert"), "flip": (client, "set_payload"), "delete": (client, "delete")}
    target, name = calls[crash_at]
    original = getattr(target, name)

    def failing(collection: str, *args: Any, **kwargs: Any) -> Any:
        if crash_at != "commit point" or collection == store.manifest:
            if crash_at != "commit point" or kwargs["points"][0].payload.get("pending"):
                raise Crash(crash_at)
        return original(collection, *args, **kwargs)

    session = store.session(NS)
    stage = session.stage("/a.md")
    stage.write(make_chunks("/a.md", 4, texts=[f"/a.md version 2 chunk {i}" for i in range(4)], content_hash="v2"), np.ones((4, 8), dtype=np.float32))
    stage.commit()
    monkeypatch.setattr(target, name, failing)
    with pytest.raises(StoreError, match=crash_at.split()[0] if crash_at != "commit point" else "manifest"):
        session.flush()
    monkeypatch.setattr(target, name, original)
    store.close()  # the process "dies": nothing else runs
    reopened = _open_folder(path, mode)
    try:
        texts = sorted(r.text for r in reopened.search(NS, np.ones(8, dtype=np.float32), top_k=50, filter=parse_filter({"source": "/a.md"})))
        version = "1" if crash_at == "commit point" else "2"
        assert texts == sorted(f"/a.md version {version} chunk {i}" for i in range(3 if version == "1" else 4))
        assert reopened.count(NS) == len(texts) + 2
        assert reopened.source_states(NS, ["/a.md"])["/a.md"].documents == {make_chunks("/a.md", 1)[0].document_id: f"v{version}"}
        assert reopened.sources(NS) == ["/a.md", "/b.md"]
        if mode == "exclusive":  # the interrupted stage's points are gone from the folder, not only hidden
            assert reopened.client.count(reopened.collection, exact=True).count == len(texts) + 2
    finally:
        reopened.close()


@pytest.mark.parametrize("vectors", [True, False])
def test_mmr_uses_stored_vectors_when_it_can_and_re_embeds_otherwise(qdrant_store: Callable[..., QdrantStore], vectors: bool) -> None:
    from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

    class Counting(HashEmbedder):
        def __init__(self, config: HashEmbedderConfig):
            super().__init__(config)
            self.documents = 0

        def embed_documents(self, texts: Any) -> np.ndarray:
            self.documents += len(texts)
            return super().embed_documents(texts)

    store = qdrant_store(vectors=vectors)
    assert ("vectors" in store.capabilities) is vectors
    embedder = Counting(HashEmbedderConfig(dim=128))
    pipeline = Pipeline.builder().store(store).embedder(embedder).chunker("recursive", size=300, overlap=0).retriever("mmr", fetch_k=12).build()
    native = Pipeline.builder().store(MemoryStore()).embedder("hash", dim=128).chunker("recursive", size=300, overlap=0).retriever("mmr", fetch_k=12).build()
    pipeline.ingest(CORPUS)
    native.ingest(CORPUS)
    before = embedder.documents
    for query in QUERIES:
        assert _ranking(pipeline.query(query, top_k=5)) == _ranking(native.query(query, top_k=5))
    # the hash embedder embeds a query as a document: one text per query; without stored vectors
    # each query also re-embeds its 12 candidates
    assert embedder.documents - before == len(QUERIES) + (0 if vectors else 12 * len(QUERIES))
    if not vectors:
        with pytest.raises(StoreError, match="vectors = false"):
            store.get_vectors("default", ["x"])


@pytest.mark.parametrize("retriever", ["bm25", "hybrid"])
def test_keyword_retrievers_over_qdrant_rank_like_the_memory_stores_native_index(qdrant_store: Callable[..., QdrantStore], retriever: str) -> None:
    store = qdrant_store()
    assert "keyword_search" not in store.capabilities
    qdrant = _pipeline(store, retriever)
    native = _pipeline(MemoryStore(), retriever)
    qdrant.ingest(CORPUS)
    native.ingest(CORPUS)
    for query in QUERIES:
        for options in ({}, {"filter": {"source": {"$ne": str(CORPUS / "faq.md")}}}):
            got, expected = qdrant.query(query, top_k=10, **options), native.query(query, top_k=10, **options)
            assert got and _ranking(got) == _ranking(expected), (query, options)
    # one build from the store for all those queries (the pipeline's writes came before the first query)
    index = keyword_index_for(store, "default")
    assert index.builds == 1


def test_keyword_index_follows_generations_and_is_saved_beside_the_local_folder(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("faq.md", "troubleshooting.md", "light-modes.md"):
        (corpus / name).write_text((CORPUS / name).read_text(encoding="utf-8"), encoding="utf-8")
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    pipeline = _pipeline(store, "bm25")
    pipeline.ingest(corpus)
    assert pipeline.query("zanzibar") == []
    (corpus / "faq.md").write_text("Zanzibar lamps ship from the island warehouse.", encoding="utf-8")
    pipeline.ingest(corpus)
    assert [r.source for r in pipeline.query("zanzibar")] == [str(corpus / "faq.md")]
    expected = _ranking(pipeline.query("lamp light warehouse", top_k=10))
    assert keyword_index_for(store, "default").builds == 1
    pipeline.close()
    assert list((tmp_path / "qdrant.keyword").glob("*.npz"))
    store = QdrantStore(path=path)
    again = _pipeline(store, "bm25")
    assert _ranking(again.query("lamp light warehouse", top_k=10)) == expected
    index = keyword_index_for(store, "default")
    assert (index.loads, index.builds) == (1, 0)
    again.close()


def test_payload_indexes_on_a_server_and_none_in_local_mode(qdrant_store: Callable[..., QdrantStore]) -> None:
    store = qdrant_store()
    TestHelpers.commit(store, "/a.md", 2)
    store.search(NS, np.ones(8, dtype=np.float32), top_k=3, filter=parse_filter({"lang": "en", "year": {"$gt": 2000}}))
    info = store.client.get_collection(store.collection)
    schema = info.payload_schema
    # unit vectors throughout: cosine on a server, the (equal, cheaper) dot product in local mode
    assert getattr(info.config.params.vectors, "distance", None) == ("Dot" if store.exclusive else "Cosine")
    if store._server:
        assert {"ns", "live", "gen", "source", "document_id", "chunk_id", "tags", "e"} <= set(schema)
        assert {"ns", "pending", "staged"} <= set(store.client.get_collection(store.manifest).payload_schema)
        assert len([f for f in schema if f.startswith(("k_", "n_"))]) == 2
    else:
        assert schema == {}


@pytest.mark.parametrize("kind", ["qdrant", "memory"])
def test_iter_chunks_skips_rows_of_another_source_type(qdrant_store: Callable[..., QdrantStore], kind: str) -> None:
    import attrs

    store: Any = qdrant_store() if kind == "qdrant" else MemoryStore()
    documents = TestHelpers.commit(store, "/a.md", 3)
    remembered = [attrs.evolve(c, source_type="memory") for c in make_chunks("/m.md", 2)]
    with store.session(NS) as session:
        stage = session.stage("/m.md")
        stage.write(remembered, np.ones((2, 8), dtype=np.float32))
        stage.commit()
    assert sorted(c.id for batch in store.iter_chunks(NS, batch_size=2) for c in batch) == sorted(c.id for c in documents)


def test_a_folder_of_the_first_layout_is_migrated_on_opening(tmp_path: Path) -> None:
    """Manifests without a document list (ragloom-qdrant's first layout, ``live`` flags only) are rebuilt from the live points."""
    from ragloom_qdrant.store import manifest_id

    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    kept = TestHelpers.commit(store, "/a.md", 3)
    TestHelpers.commit(store, "/b.md", 2)
    client = store.client
    for source in ("/a.md", "/b.md"):  # back to the first layout: no docs, no staged list
        (point,) = client.retrieve(store.manifest, ids=[manifest_id(NS, source)], with_payload=True)
        payload = {k: v for k, v in (point.payload or {}).items() if k not in ("docs", "staged", "drop", "others")}
        client.overwrite_payload(store.manifest, payload=payload, points=[manifest_id(NS, source)])
    # a stage the first layout left behind: invisible only through live = false
    leftover = store._points(NS, 9, make_chunks("/a.md", 2, texts=["leftover 0", "leftover 1"]), np.ones((2, 8), dtype=np.float32))
    for point in leftover:
        (point.payload or {})["live"] = False
    client.upsert(store.collection, points=leftover)
    store.close()
    reopened = QdrantStore(path=path)
    try:
        assert reopened.sources(NS) == ["/a.md", "/b.md"] and reopened.count(NS) == 5
        assert reopened.source_states(NS, ["/a.md"])["/a.md"].documents == {kept[0].document_id: "v1"}
        assert "leftover 0" not in {r.text for r in reopened.search(NS, np.ones(8, dtype=np.float32), top_k=50)}
        TestHelpers.commit(reopened, "/a.md", 2, version=2)  # the next re-ingest replaces the migrated generation
        assert sorted(r.text for r in reopened.search(NS, np.ones(8, dtype=np.float32), top_k=50) if r.source == "/a.md") == [
            "/a.md version 2 chunk 0",
            "/a.md version 2 chunk 1",
        ]
        assert reopened.client.count(reopened.collection, exact=True).count == 4
    finally:
        reopened.close()


def test_local_mode_reads_add_payload_conditions_only_when_needed() -> None:
    """Local mode checks payload conditions in Python per point: the store leaves them out unless something must be hidden."""
    import attrs
    from qdrant_client import QdrantClient

    from ragloom_qdrant import QdrantStoreConfig

    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    try:
        assert store.exclusive
        TestHelpers.commit(store, "/a.md", 3)
        assert store._where(NS) is None  # one namespace, nothing staged: a plain vector scan
        session = store.session(NS)
        stage = session.stage("/b.md")
        stage.write(make_chunks("/b.md", 2, texts=["staged 0", "staged 1"]), np.ones((2, 8), dtype=np.float32))
        assert store._where(NS) is not None and store.count(NS) == 3  # the staged points are hidden
        assert "staged 0" not in {r.text for r in store.search(NS, np.ones(8, dtype=np.float32), top_k=10)}
        stage.commit()
        session.close()
        assert store._where(NS) is None and store.count(NS) == 5
        TestHelpers.commit(store, "/c.md", 1, namespace="other")  # a second namespace: reads name theirs
        assert store._where(NS) is not None and store.count(NS) == 5 and store.count("other") == 1
        memory = [attrs.evolve(c, source_type="memory") for c in make_chunks("/m.md", 1)]
        with store.session("other") as writer:
            memo = writer.stage("/m.md")
            memo.write(memory, np.ones((1, 8), dtype=np.float32))
            memo.commit()
        assert store.count("other") == 1  # rows of another source type stay out
    finally:
        store.close()
    shared = QdrantStore(client=QdrantClient(location=":memory:"))
    try:
        assert not shared.exclusive and shared._where(NS) is not None  # a client passed in may be shared: always filtered
    finally:
        shared.close()


def test_a_pending_flip_of_the_first_layout_is_finished_by_the_migration(tmp_path: Path) -> None:
    from ragloom_qdrant.store import manifest_id

    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    TestHelpers.commit(store, "/a.md", 3)
    client = store.client
    new = store._points(NS, 2, make_chunks("/a.md", 2, texts=["new 0", "new 1"], content_hash="v2"), np.ones((2, 8), dtype=np.float32))
    for point in new:
        (point.payload or {})["live"] = False  # the first layout staged with live = false
    client.upsert(store.collection, points=new)
    old_layout = {"ns": NS, "source": "/a.md", "committed": 2, "next": 2, "pending": True, "keep": []}  # killed after its commit point
    client.overwrite_payload(store.manifest, payload=old_layout, points=[manifest_id(NS, "/a.md")])
    store.close()
    reopened = QdrantStore(path=path)
    try:
        assert sorted(r.text for r in reopened.search(NS, np.ones(8, dtype=np.float32), top_k=50)) == ["new 0", "new 1"]
        assert reopened.source_states(NS, ["/a.md"])["/a.md"].generation == 2
        assert reopened.source_counts(NS) == {"/a.md": 2} and reopened.client.count(reopened.collection, exact=True).count == 2
    finally:
        reopened.close()

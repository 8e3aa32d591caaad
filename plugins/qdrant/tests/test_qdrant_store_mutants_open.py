"""Opening a qdrant store: the config reaching the client, refusals, payload indexes, the folder's SQLite tuning.

Written against the qdrant_store mutation survivors. The payload-index test needs a client that is not local
mode (the store creates indexes on a server only): local mode in memory under another class name stands in
for a server and records the index requests it receives (local mode itself ignores them).
"""

from __future__ import annotations

import shutil
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient, models
from qdrant_client.local.persistence import CollectionPersistence
from qdrant_client.local.qdrant_local import QdrantLocal

import ragloom_qdrant.store as store_module
from ragloom import StoreError
from ragloom.plugin import Secret, parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig
from ragloom_qdrant.filters import key_hash

NS = "t"


def _commit(store: QdrantStore, source: str, count: int, metadata: dict[str, Any] | None = None) -> None:
    chunks = make_chunks(source, count, metadata=metadata or {})
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(chunks, np.random.default_rng(count).standard_normal((count, 8)).astype(np.float32))
        stage.commit()


def test_the_config_reaches_the_server_client(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[dict[str, Any]] = []

    class Recording(QdrantClient):
        def __init__(self, **options: Any):
            made.append(options)
            super().__init__(**options)

    monkeypatch.setattr(store_module, "QdrantClient", Recording)
    monkeypatch.delenv("RAGLOOM_TEST_QDRANT_NO_KEY", raising=False)
    config = QdrantStoreConfig(url="http://127.0.0.1:9", api_key=Secret("RAGLOOM_TEST_QDRANT_NO_KEY"), timeout=3.7, prefer_grpc=True)
    with pytest.raises(StoreError, match="cannot open http://127.0.0.1:9"):
        QdrantStore(config)
    # no variable set: no key (a server without authentication), the timeout in whole seconds, no version check
    assert made == [{"url": "http://127.0.0.1:9", "api_key": None, "timeout": 3, "prefer_grpc": True, "check_compatibility": False}]
    monkeypatch.setenv("RAGLOOM_TEST_QDRANT_NO_KEY", "k-123")
    with pytest.raises(StoreError):
        QdrantStore(QdrantStoreConfig(url="http://127.0.0.1:9", api_key=Secret("RAGLOOM_TEST_QDRANT_NO_KEY")))
    assert made[1] == {"url": "http://127.0.0.1:9", "api_key": "k-123", "timeout": 10, "prefer_grpc": False, "check_compatibility": False}


def test_a_folder_store_opened_in_one_thread_is_used_from_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # what qdrant-client decides on a SQLite built THREADSAFE=2 (macOS's): connections checked for their thread
    # unless the client is opened with force_disable_check_same_thread (Linux's THREADSAFE=1 never checks)
    monkeypatch.setattr(CollectionPersistence, "CHECK_SAME_THREAD", True)
    store = QdrantStore(path=tmp_path / "qdrant")
    failures: list[BaseException] = []

    def work() -> None:
        try:
            _commit(store, "/a.md", 3)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            failures.append(exc)

    try:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
        assert failures == []
        assert store.count(NS) == 3 and store.sources(NS) == ["/a.md"]
    finally:
        store.close()


def test_a_folder_that_cannot_be_made_is_named_in_the_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    where = blocker / "qdrant"
    with pytest.raises(StoreError) as info:
        QdrantStore(QdrantStoreConfig(path="elsewhere"), path=where)
    message = str(info.value)
    assert f"cannot open {where}: " in message
    assert "NotADirectoryError" in message or "FileExistsError" in message
    assert not (tmp_path / "elsewhere").exists()


def test_a_collection_without_a_single_unnamed_vector_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    client = QdrantClient(path=str(path))
    client.create_collection("ragloom", vectors_config={"dense": models.VectorParams(size=4, distance=models.Distance.COSINE)})
    client.close()
    with pytest.raises(StoreError, match=r"collection 'ragloom' exists but has no single unnamed vector \(not a ragloom collection\)"):
        QdrantStore(path=path)


class ServerLike(QdrantLocal):
    """Local mode under another name: the store takes it for a server; it records the payload indexes asked for."""

    requests: list[tuple[str, str, Any]]
    failing: str | None = None

    def create_payload_index(self, collection_name: str, field_name: str, field_schema: Any = None, field_type: Any = None, **kwargs: Any) -> Any:
        if field_name == self.failing:
            raise RuntimeError("the server refused the index")
        assert kwargs.get("wait") is True  # the store goes on only once the index exists
        self.requests.append((collection_name, field_name, field_schema))
        return super().create_payload_index(collection_name, field_name, field_schema, field_type, **kwargs)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
def test_payload_indexes_asked_of_a_server() -> None:
    client = QdrantClient(location=":memory:")
    client._client.__class__ = ServerLike
    requests: list[tuple[str, str, Any]] = []
    client._client.requests = requests  # type: ignore[attr-defined]
    kind = models.PayloadSchemaType
    store = QdrantStore(QdrantStoreConfig(collection="kb"), client=client)
    try:
        assert store._server
        assert requests == [("kb_sources", "ns", kind.KEYWORD), ("kb_sources", "pending", kind.BOOL), ("kb_sources", "staged", kind.INTEGER)]
        _commit(store, "/a.md", 2, metadata={"lang": "en", "year": 2001})
        assert requests[3:] == [
            ("kb", "ns", kind.KEYWORD), ("kb", "live", kind.BOOL), ("kb", "source_type", kind.KEYWORD), ("kb", "gen", kind.INTEGER),
            ("kb", "source", kind.KEYWORD), ("kb", "document_id", kind.KEYWORD), ("kb", "chunk_id", kind.KEYWORD), ("kb", "tags", kind.KEYWORD),
            ("kb", "e", kind.KEYWORD),
        ]
        del requests[:]
        # "e" (an $exists) sorts before the k_ / n_ fields and is indexed already: the others still are
        spec = {"lang": "en", "year": {"$gt": 2000}, "source": "/a.md", "year2": {"$exists": False}}
        assert len(store.search(NS, np.ones(8, dtype=np.float32), top_k=5, filter=parse_filter(spec))) == 2
        store.search(NS, np.ones(8, dtype=np.float32), top_k=5, filter=parse_filter(spec))
        # the metadata fields a filter reads, each once, numbers as floats; reserved and already indexed fields not again
        assert sorted(requests) == sorted([("kb", f"k_{key_hash('lang')}", kind.KEYWORD), ("kb", f"n_{key_hash('year')}", kind.FLOAT)])
        client._client.failing = f"k_{key_hash('colour')}"  # type: ignore[attr-defined]
        with pytest.raises(StoreError, match=rf"^qdrant store: creating the payload index k_{key_hash('colour')} failed: RuntimeError: the server refused the index$"):
            store.search(NS, np.ones(8, dtype=np.float32), top_k=5, filter=parse_filter({"colour": "red"}))
    finally:
        store.close()


def _journal(database: Path) -> str:
    connection = sqlite3.connect(database)
    try:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])
    finally:
        connection.close()


def test_the_folder_point_table_is_in_wal_mode_and_synced_before_each_manifest(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    table = path / "collection" / "ragloom" / "storage.sqlite"
    store = QdrantStore(path=path)
    try:
        _commit(store, "/a.md", 3)
        _commit(store, "/b.md", 2)
        assert _journal(table) == "wal"
        # the points the manifests name are in the database file itself (checkpointed), not only in its WAL
        copy = tmp_path / "copy.sqlite"
        shutil.copyfile(table, copy)
        connection = sqlite3.connect(copy)
        try:
            assert connection.execute("SELECT count(*) FROM points").fetchone()[0] == 5
        finally:
            connection.close()
    finally:
        store.close()
    reopened = QdrantStore(path=path)  # an existing collection is tuned again on opening
    try:
        _commit(reopened, "/c.md", 1)
        assert _journal(table) == "wal"
    finally:
        reopened.close()


def test_a_folder_opened_through_a_client_passed_in_keeps_its_journal(tmp_path: Path) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(client=QdrantClient(path=str(path)))
    try:
        assert not store.exclusive
        _commit(store, "/a.md", 2)
        assert _journal(path / "collection" / "ragloom" / "storage.sqlite") == "delete"
    finally:
        store.close()

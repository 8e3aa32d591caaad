"""Each step of the qdrant store names itself when the client fails it, written against the qdrant_store
mutation survivors. Faults are injected into a real client (local mode): the n-th call of one client method on
one collection raises; the store's error must be ``qdrant store: <step> failed: Refused: <message>``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from ragloom import StoreError
from ragloom.plugin import parse_filter
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig
from ragloom_qdrant.store import manifest_id

NS = "t"


class Refused(Exception):
    """A fault injected into the client."""


def refuse(monkeypatch: pytest.MonkeyPatch, target: Any, method: str, collection: str, nth: int = 1) -> list[int]:
    """Make the ``nth`` call of ``target.method`` on ``collection`` raise (``target``: a client or the QdrantClient class)."""
    original = getattr(target, method)
    calls = [0]

    def failing(*args: Any, **kwargs: Any) -> Any:
        name = args[1] if isinstance(args[0], QdrantClient) else args[0]
        if name == collection:
            calls[0] += 1
            if calls[0] == nth:
                raise Refused(f"{method} refused")
        return original(*args, **kwargs)

    monkeypatch.setattr(target, method, failing)
    return calls


def _message(step: str, method: str) -> str:
    return rf"^qdrant store: {step} failed: Refused: {method} refused$"


def _commit(store: QdrantStore, source: str, count: int, version: int = 1) -> list[Any]:
    chunks = make_chunks(source, count, texts=[f"{source} v{version} {i}" for i in range(count)], content_hash=f"v{version}")
    with store.session(NS) as session:
        stage = session.stage(source)
        stage.write(chunks, np.random.default_rng(version).standard_normal((count, 8)).astype(np.float32))
        stage.commit()
    return chunks


@pytest.fixture
def memory() -> Any:
    store = QdrantStore(QdrantStoreConfig(path=":memory:"))
    yield store
    store.close()


@pytest.fixture
def shared() -> Any:
    store = QdrantStore(client=QdrantClient(location=":memory:"))
    yield store
    store.close()


def test_reading_manifests(monkeypatch: pytest.MonkeyPatch, memory: QdrantStore) -> None:
    _commit(memory, "/a.md", 2)
    with monkeypatch.context() as patch:
        refuse(patch, memory.client, "retrieve", memory.manifest)
        with pytest.raises(StoreError, match=_message("reading source manifests", "retrieve")):
            memory.source_states(NS, ["/a.md"])
    refuse(monkeypatch, memory.client, "scroll", memory.manifest)
    with pytest.raises(StoreError, match=_message("reading source manifests", "scroll")):
        memory.source_counts(NS)


def test_writing_a_manifest(monkeypatch: pytest.MonkeyPatch, memory: QdrantStore) -> None:
    refuse(monkeypatch, memory.client, "upsert", memory.manifest)
    with pytest.raises(StoreError, match=_message("writing a source manifest", "upsert")):
        memory.session(NS).stage("/a.md")


def test_writing_reading_and_deleting_points(monkeypatch: pytest.MonkeyPatch, memory: QdrantStore) -> None:
    chunks = _commit(memory, "/a.md", 3)
    cases: list[tuple[str, str, str, Callable[[], Any]]] = [
        ("upsert", "writing points", "", lambda: memory.session(NS).stage("/b.md").write(make_chunks("/b.md", 1), np.ones((1, 8), dtype=np.float32))),
        ("scroll", "scrolling chunks", "", lambda: list(memory.iter_chunks(NS))),
        ("scroll", "scrolling points", "", lambda: memory.delete(NS, parse_filter({"source": "/a.md"}))),
        ("delete", "delete", "", lambda: memory.delete(NS, parse_filter({"source": "/a.md"}))),
        ("count", "count", "", lambda: memory.count(NS)),
        ("retrieve", "reading vectors", "", lambda: memory.session(NS).stage("/a.md").update_metadata(chunks[:1])),
    ]
    for method, step, _, action in cases:
        with monkeypatch.context() as patch:
            refuse(patch, memory.client, method, memory.collection)
            with pytest.raises(StoreError, match=_message(step, method)):
                action()


def test_dropping_an_aborted_stage(monkeypatch: pytest.MonkeyPatch, memory: QdrantStore) -> None:
    _commit(memory, "/a.md", 1)
    stage = memory.session(NS).stage("/b.md")
    stage.write(make_chunks("/b.md", 2), np.ones((2, 8), dtype=np.float32))
    refuse(monkeypatch, memory.client, "delete", memory.collection)
    with pytest.raises(StoreError, match=_message("dropping an aborted stage", "delete")):
        stage.abort()


@pytest.mark.parametrize(("method", "nth", "step"), [("set_payload", 1, "making a generation visible"), ("delete", 1, "dropping the old generation"), ("delete", 2, "dropping the old generation")])
def test_the_steps_of_a_shared_flip(monkeypatch: pytest.MonkeyPatch, shared: QdrantStore, method: str, nth: int, step: str) -> None:
    _commit(shared, "/a.md", 2)
    refuse(monkeypatch, shared.client, method, shared.collection, nth)
    with pytest.raises(StoreError, match=_message(step, method)):
        _commit(shared, "/a.md", 2, version=2)  # the re-ingest drops the old generation's points (the second delete)


def test_dropping_the_old_generation_in_exclusive_mode(monkeypatch: pytest.MonkeyPatch, memory: QdrantStore) -> None:
    _commit(memory, "/a.md", 2)
    refuse(monkeypatch, memory.client, "delete", memory.collection)
    with pytest.raises(StoreError, match=_message("dropping the old generation", "delete")):
        _commit(memory, "/a.md", 2, version=2)


def test_dropping_an_interrupted_stage_on_opening(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    _commit(store, "/a.md", 1)
    stage = store.session(NS).stage("/a.md")
    stage.write(make_chunks("/a.md", 2), np.ones((2, 8), dtype=np.float32))
    store.close()  # "killed": the stage is neither committed nor aborted
    refuse(monkeypatch, QdrantClient, "delete", "ragloom")
    with pytest.raises(StoreError, match=_message("dropping an interrupted stage", "delete")):
        QdrantStore(path=path)


@pytest.mark.parametrize(("method", "nth"), [("set_payload", 1), ("delete", 1), ("delete", 2), ("set_payload", 2)])
def test_each_step_of_a_first_layout_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, nth: int) -> None:
    path = tmp_path / "qdrant"
    store = QdrantStore(path=path)
    _commit(store, "/a.md", 2)
    # the first layout, killed after its commit point: no document list, the flip still pending
    layout = {"ns": NS, "source": "/a.md", "committed": 1, "next": 1, "pending": True, "keep": []}
    store.client.overwrite_payload(store.manifest, payload=layout, points=[manifest_id(NS, "/a.md")])
    store.close()
    refuse(monkeypatch, QdrantClient, method, "ragloom", nth)
    with pytest.raises(StoreError, match=_message("migrating a manifest", method)):
        QdrantStore(path=path)

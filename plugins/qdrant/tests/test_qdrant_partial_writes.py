"""A write (or metadata update) that fails part-way — its first batch of points stored, the second refused — cannot be
committed, and aborting its stage leaves nothing behind: not in the count, the sources or the raw collection, and not
after a reopen; the source's previous generation stays whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client.local.qdrant_local import QdrantLocal

from ragloom import StoreError
from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore, QdrantStoreConfig

NS = "t"


def _vectors(count: int) -> np.ndarray:
    return np.random.default_rng(count).standard_normal((count, 8)).astype(np.float32)


def _refuse_the_second_upsert(monkeypatch: pytest.MonkeyPatch, store: QdrantStore) -> None:
    """Fault injection: the collection's second upsert from now on fails, the first is stored."""
    original = QdrantLocal.upsert
    calls = {"n": 0}

    def upsert(self: QdrantLocal, collection_name: str, *args: Any, **kwargs: Any) -> Any:
        if collection_name == store.collection:
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("disk full")
        return original(self, collection_name, *args, **kwargs)

    monkeypatch.setattr(QdrantLocal, "upsert", upsert)


def _raw_points(store: QdrantStore) -> int:
    return store.client.count(store.collection, exact=True).count


@pytest.mark.parametrize("how", ["write", "update_metadata"])
def test_a_write_failing_part_way_is_not_committed_and_its_abort_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    path = tmp_path / "q"
    store = QdrantStore(QdrantStoreConfig(path=str(path), batch_size=2))
    old = make_chunks("/a.md", 4, texts=[f"old {i}" for i in range(4)])
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(old, _vectors(4))
        stage.commit()
    before = _raw_points(store)
    _refuse_the_second_upsert(monkeypatch, store)
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        with pytest.raises(StoreError):
            if how == "write":
                stage.write(make_chunks("/a.md", 4, texts=[f"new {i}" for i in range(4)], content_hash="v2"), _vectors(4))
            else:
                stage.update_metadata(make_chunks("/a.md", 4, texts=[f"old {i}" for i in range(4)], metadata={"n": 1}, metadata_hash="m2"))
        assert _raw_points(store) > before  # the first batch reached the collection
        with pytest.raises(StoreError, match=r"cannot commit the stage of /a\.md: one of its writes failed"):
            stage.commit()
    monkeypatch.undo()
    assert _raw_points(store) == before == 4  # the session's close aborted the stage: its stored batch is gone
    assert store.count(NS) == 4 and sorted(r.text for r in store.search(NS, _vectors(1)[0], top_k=10)) == [f"old {i}" for i in range(4)]
    store.close()
    again = QdrantStore(path=path)
    assert again.count(NS) == 4 and again.sources(NS) == ["/a.md"] and _raw_points(again) == 4
    again.close()


def test_the_abort_after_a_failed_write_also_drops_the_stages_earlier_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    store = QdrantStore(QdrantStoreConfig(path=":memory:", batch_size=2))
    with store.session(NS) as session:
        stage = session.stage("/a.md")
        stage.write(make_chunks("/a.md", 2, part="one"), _vectors(2))  # stored whole
        _refuse_the_second_upsert(monkeypatch, store)
        with pytest.raises(StoreError):
            stage.write(make_chunks("/a.md", 4, part="two"), _vectors(4))
        stage.abort()
    monkeypatch.undo()
    assert _raw_points(store) == 0 and store.count(NS) == 0 and store.sources(NS) == []
    store.close()

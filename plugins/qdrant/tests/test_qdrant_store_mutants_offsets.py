"""Every scroll starts at offset None: a Qdrant server refuses any other first offset that is not a point id (local
mode reads an empty string as the start). The client is real; a wrapper checks each offset as the server's request
validation would, then calls through (written against the qdrant_store survivors _all_manifests 1, _scroll 3 and
iter_chunks 3)."""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from ragloom.testing.store_contract import make_chunks
from ragloom_qdrant import QdrantStore

NS = "t"


class ServerChecks(QdrantClient):
    """Local mode with a server's check of ``scroll``'s offset: None, an unsigned integer or a UUID."""

    offsets: list[Any]

    def scroll(self, *args: Any, offset: Any = None, **kwargs: Any) -> Any:
        self.offsets.append(offset)
        valid = offset is None or (isinstance(offset, int) and offset >= 0)
        if isinstance(offset, str):
            try:
                uuid.UUID(offset)
                valid = True
            except ValueError:
                valid = False
        if not valid:
            raise ValueError(f"Unable to parse offset {offset!r}: not a point id")  # what a server answers with 400
        return super().scroll(*args, offset=offset, **kwargs)


@pytest.fixture
def store() -> QdrantStore:
    client = ServerChecks(location=":memory:")
    client.offsets = []
    made = QdrantStore(client=client)
    with made.session(NS) as session:
        for source in ("/a.md", "/b.md"):
            stage = session.stage(source)
            stage.write(make_chunks(source, 3), np.ones((3, 8), dtype=np.float32))
            stage.commit()
    client.offsets.clear()
    return made


def test_every_scroll_of_the_manifests_starts_at_none(store: QdrantStore) -> None:
    assert sorted(store.sources(NS)) == ["/a.md", "/b.md"]
    assert store.client.offsets and store.client.offsets[0] is None  # type: ignore[attr-defined]


def test_every_scroll_of_points_starts_at_none(store: QdrantStore) -> None:
    chunks = [c for batch in store.iter_chunks(NS, batch_size=2) for c in batch]
    assert len(chunks) == 6
    assert store.client.offsets[0] is None  # type: ignore[attr-defined]
    store.client.offsets.clear()  # type: ignore[attr-defined]
    assert store.source_counts(NS) == {"/a.md": 3, "/b.md": 3}
    assert list(store._scroll(None, False)) and store.client.offsets[0] is None  # type: ignore[attr-defined]

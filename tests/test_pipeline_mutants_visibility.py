"""Re-ingest against a store whose commits become visible only at ``flush()``.

The Store protocol lets a store make a committed source visible as late as the
session's ``flush`` (a database committing many sources in one transaction).
The memory store shows a commit at once, so it cannot tell whether the pipeline
flushes before it reads the state of a source it has already changed in the
same call. ``FlushVisibleStore`` is the memory store with that allowed delay:
``source_states`` answers with a committed source's state as of the last flush.
Written against ``_IngestRun.stage__mutmut_1`` (a staged source not marked as
changed by this run: a later read of it in the same call saw the old state).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragloom import Pipeline
from ragloom.stores.base import SourceState
from ragloom.stores.memory import MemoryStore


class FlushVisibleStore(MemoryStore):
    """The memory store, its source states as of the last flush: a commit shows in ``source_states`` only after ``flush()``."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden: dict[tuple[str, str], SourceState] = {}  # committed since the last flush: the state still shown

    def source_states(self, namespace: str, sources: Sequence[str]) -> dict[str, SourceState]:
        current = super().source_states(namespace, sources)
        return {s: self.hidden.get((namespace, s), current[s]) for s in sources}

    def session(self, namespace: str) -> Any:
        session = super().session(namespace)
        stage, flush, close = session.stage, session.flush, session.close

        def staged(source: str, state: SourceState | None = None) -> Any:
            before = MemoryStore.source_states(self, namespace, [source])[source]
            opened = stage(source, state)
            commit = opened.commit

            def committed() -> int:
                self.hidden.setdefault((namespace, source), before)
                return commit()

            opened.commit = committed
            return opened

        def flushed() -> None:
            flush()
            self.hidden.clear()

        def closed() -> None:
            close()
            self.hidden.clear()

        session.stage, session.flush, session.close = staged, flushed, closed
        return session


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def build(store: MemoryStore) -> Pipeline:
    builder = Pipeline.builder().chunker("recursive", size=200, overlap=0).embedder("hash", dim=32)
    return builder.loader("jsonl", content_field="text", id_field="id").store(store).build()


def test_the_store_double_hides_a_commit_until_flush(tmp_path: Path) -> None:
    """The premise: after a commit and before the flush, the old state is what the store reports."""
    store = FlushVisibleStore()
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"id": "a", "text": "apples"}])
    build(store).ingest(path)
    source = str(path)
    assert len(store.source_states("default", [source])[source].documents) == 1
    with store.session("default") as session:
        stage = session.stage(source)
        stage.keep(set())
        stage.commit()
        assert len(store.source_states("default", [source])[source].documents) == 1, "committed, not yet flushed"
        session.flush()
        assert store.source_states("default", [source])[source].documents == {}


def test_a_file_changed_then_met_again_in_the_same_call_is_read_after_its_commit(tmp_path: Path) -> None:
    """A file named on its own and then again inside its folder, in one ingest call: the second pass sees the
    first pass's commit (it flushes before reading), so it finds the file unchanged and removes nothing twice."""
    store = FlushVisibleStore()
    pipeline = build(store)
    folder = tmp_path / "docs"
    folder.mkdir()
    path = folder / "rows.jsonl"
    write_jsonl(path, [{"id": f"r{i}", "text": f"entry {i} of the catalogue"} for i in range(3)])
    first = pipeline.ingest(path)
    assert first.documents == 3 and first.failed == ()

    write_jsonl(path, [{"id": f"r{i}", "text": f"entry {i} of the catalogue"} for i in range(2)])  # row r2 deleted: no new chunk
    again = pipeline.ingest([path, folder])
    assert again.failed == ()
    assert again.sources == 2
    assert again.removed == 1, "the deleted row is removed once"
    assert again.unchanged_sources == 1, "the folder's pass finds the file as the first pass left it"
    assert again.unchanged == 4
    assert len(store.source_states("default", [str(path)])[str(path)].documents) == 2
    assert sorted(h.text for h in pipeline.query("entry of the catalogue", top_k=10)) == [
        "entry 0 of the catalogue",
        "entry 1 of the catalogue",
    ]


def test_a_retagged_file_met_again_in_the_same_call_is_unchanged_the_second_time(tmp_path: Path) -> None:
    """The metadata-only path (a retag, no new chunk) opens the stage the same way: the second pass sees it."""
    store = FlushVisibleStore()
    pipeline = build(store)
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"id": "a", "text": "apples and pears"}, {"id": "b", "text": "plums and cherries"}])
    pipeline.ingest(path)
    again = pipeline.ingest([path, path], tags=["fruit"])
    assert again.failed == ()
    assert (again.updated, again.unchanged, again.unchanged_sources) == (2, 2, 1)
    assert len(pipeline.query("apples", top_k=5, filter={"tags": "fruit"})) == 2

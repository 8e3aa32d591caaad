"""Re-ingest promises the pipeline keeps, each with the bug it guards against named.

Each test fails when the promise is broken in ``pipeline.py``: a deleted row that
stays searchable, a failed source whose staged rows are not aborted, ingest tags
replacing a document's own tags, a sibling folder removed with its prefix, a file
that loads nothing keeping its old chunks. Real memory store, real loaders, real files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CountingEmbedder

from ragloom import Document, LoaderError, Pipeline
from ragloom.stores.memory import MemoryStore


def build(store: Any = None, **ingest: Any) -> Pipeline:
    builder = Pipeline.builder().chunker("recursive", size=300, overlap=0).embedder(CountingEmbedder(dim=64))
    builder = builder.loader("jsonl", content_field="text")
    builder = builder.store(store if store is not None else MemoryStore())
    if ingest:
        builder = builder.ingest_options(**ingest)
    return builder.build()


def texts(pipeline: Pipeline) -> set[str]:
    return {c.text for c in pipeline.store.chunks(pipeline.namespace)}  # type: ignore[attr-defined]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


# ---------------------------------------------------------------------- rows deleted from a file


def test_a_row_deleted_from_the_end_of_a_jsonl_file_is_not_searchable_after_reingest(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    write_jsonl(path, [{"text": f"row number {i} about lamps"} for i in range(3)])
    pipeline = build()
    first = pipeline.ingest(path)
    assert first.documents == 3 and pipeline.store.count("default") == 3
    write_jsonl(path, [{"text": f"row number {i} about lamps"} for i in range(2)])  # the last row deleted
    again = pipeline.ingest(path)
    assert again.unchanged_sources == 0, "the file changed: one of its rows is gone"
    assert again.unchanged == 2 and again.chunks == 0 and again.removed == 1
    assert texts(pipeline) == {"row number 0 about lamps", "row number 1 about lamps"}
    assert all("row number 2" not in r.text for r in pipeline.query("row number 2 about lamps", top_k=10))
    # a third, unchanged run keeps both rows and reports the source unchanged
    third = pipeline.ingest(path)
    assert third.unchanged_sources == 1 and third.removed == 0 and pipeline.store.count("default") == 2


def test_a_row_deleted_from_the_middle_of_a_file_with_ids_is_removed(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    pipeline = Pipeline.builder().embedder("hash", dim=64).loader("jsonl", content_field="text", id_field="id").build()
    write_jsonl(path, [{"id": f"r{i}", "text": f"entry {i} of the catalogue"} for i in range(4)])
    pipeline.ingest(path)
    write_jsonl(path, [{"id": f"r{i}", "text": f"entry {i} of the catalogue"} for i in (0, 1, 3)])
    again = pipeline.ingest(path)
    assert again.unchanged == 2 and again.updated == 1 and again.removed == 1 and again.unchanged_sources == 0  # r3 moved a line up
    assert sorted(texts(pipeline)) == ["entry 0 of the catalogue", "entry 1 of the catalogue", "entry 3 of the catalogue"]


def test_a_row_deleted_from_a_csv_file_is_not_searchable_after_reingest(tmp_path: Path) -> None:
    path = tmp_path / "table.csv"
    rows = ["name,text"] + [f"item{i},the {i}th lamp in the table" for i in range(3)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    pipeline = build()
    assert pipeline.ingest(path).documents == 3
    path.write_text("\n".join(rows[:-1]) + "\n", encoding="utf-8")
    again = pipeline.ingest(path)
    assert again.unchanged_sources == 0 and again.removed == 1 and again.unchanged == 2
    assert pipeline.store.count("default") == 2
    assert not any("2th lamp" in t for t in texts(pipeline))


# ---------------------------------------------------------------------- a failed source is aborted


class _SpyStage:
    """A real stage, recording whether the pipeline committed or aborted it."""

    def __init__(self, stage: Any, log: list[str]):
        self._stage = stage
        self._log = log
        self.source = stage.source
        self.generation = stage.generation
        self.state = stage.state

    def write(self, chunks: Any, vectors: Any) -> None:
        self._log.append(f"write {self.source} {len(chunks)}")
        self._stage.write(chunks, vectors)

    def keep(self, document_ids: Any) -> None:
        self._stage.keep(document_ids)

    def update_metadata(self, chunks: Any) -> None:
        self._stage.update_metadata(chunks)

    def commit(self) -> int:
        self._log.append(f"commit {self.source}")
        return int(self._stage.commit())

    def abort(self) -> None:
        self._log.append(f"abort {self.source}")
        self._stage.abort()


class _SpySession:
    def __init__(self, session: Any, log: list[str]):
        self._session = session
        self._log = log

    def stage(self, source: str, state: Any = None) -> _SpyStage:
        return _SpyStage(self._session.stage(source, state), self._log)

    def flush(self) -> None:
        self._session.flush()

    def close(self) -> None:
        self._log.append("session closed")
        self._session.close()

    def __enter__(self) -> _SpySession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SpyStore(MemoryStore):
    """The real memory store; its sessions and stages log commit / abort / close in order."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    def session(self, namespace: str) -> Any:
        return _SpySession(super().session(namespace), self.log)


def _broken_jsonl(path: Path) -> None:
    path.write_text('{"text": "a good first line"}\n{"text": "a good second line"}\n{not json\n', encoding="utf-8")


@pytest.mark.parametrize("on_error", ["skip", "fail"])
def test_a_source_failing_halfway_is_aborted_by_the_pipeline_itself(tmp_path: Path, on_error: str) -> None:
    path = tmp_path / "broken.jsonl"
    _broken_jsonl(path)
    store = SpyStore()
    pipeline = build(store, batch_size=1, on_error=on_error)
    if on_error == "fail":
        with pytest.raises(LoaderError):
            pipeline.ingest(path)
    else:
        result = pipeline.ingest(path)
        assert [f.source for f in result.failed] == [str(path)] and result.sources == 0
    source = str(path)
    assert f"write {source} 1" in store.log, store.log  # the good lines reached a stage
    assert f"abort {source}" in store.log and store.log.index(f"abort {source}") < store.log.index("session closed"), store.log
    assert f"commit {source}" not in store.log
    assert store.count("default") == 0 and store.sources("default") == []


def test_a_failed_reingest_aborts_its_stage_and_keeps_the_old_generation(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    write_jsonl(path, [{"text": "old line one"}, {"text": "old line two"}])
    store = SpyStore()
    pipeline = build(store, batch_size=1, on_error="skip")
    pipeline.ingest(path)
    _broken_jsonl(path)
    store.log.clear()
    result = pipeline.ingest(path)
    assert len(result.failed) == 1
    assert store.log.index(f"abort {path}") < store.log.index("session closed"), store.log
    assert texts(pipeline) == {"old line one", "old line two"}


def test_documents_failing_halfway_through_ingest_documents_are_aborted() -> None:
    store = SpyStore()
    pipeline = build(store, batch_size=1)

    def documents() -> Iterator[Document]:
        yield Document.create("first part of the record", "app://records/1", part=1)
        yield Document.create("second part of the record", "app://records/1", part=2)
        raise LoaderError("the feed broke", source="app://records/1")

    with pytest.raises(LoaderError, match="the feed broke"):
        pipeline.ingest_documents(documents())
    assert store.log.index("abort app://records/1") < store.log.index("session closed"), store.log
    assert store.count("default") == 0


# ---------------------------------------------------------------------- tags


def test_ingest_tags_are_added_to_a_documents_own_tags() -> None:
    pipeline = build()
    document = Document.create("a record that carries its own tags", "app://records/7", tags=("own", "shared"))
    pipeline.ingest_documents([document], tags=["shared", "extra"])
    (chunk,) = pipeline.store.chunks("default")  # type: ignore[attr-defined]
    assert chunk.tags == ("own", "shared", "extra")
    for tag in ("own", "extra"):
        assert [r.source for r in pipeline.query("record", filter={"tags": tag})] == ["app://records/7"]


def test_configured_source_tags_and_call_tags_are_both_applied(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a text about lamps\n", encoding="utf-8")
    pipeline = (
        Pipeline.builder().embedder("hash", dim=64).source(str(tmp_path / "a.txt"), tags=["configured"]).build()
    )
    pipeline.ingest(tags=["cli"])
    (chunk,) = pipeline.store.chunks("default")  # type: ignore[attr-defined]
    assert chunk.tags == ("configured", "cli")


# ---------------------------------------------------------------------- sibling folders


def test_reingesting_a_folder_leaves_a_sibling_folder_with_the_same_prefix(tmp_path: Path) -> None:
    for folder in ("docs", "docs2", "docs-old"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "page.md").write_text(f"# {folder}\n\nThe page of {folder}.\n", encoding="utf-8")
    (tmp_path / "docs" / "gone.md").write_text("# gone\n\nThis one will be deleted.\n", encoding="utf-8")
    pipeline = build()
    for folder in ("docs", "docs2", "docs-old"):
        pipeline.ingest(tmp_path / folder)
    assert len(pipeline.sources()) == 4
    (tmp_path / "docs" / "gone.md").unlink()
    again = pipeline.ingest(tmp_path / "docs")
    assert again.removed_sources == (str(tmp_path / "docs" / "gone.md"),)
    assert sorted(pipeline.sources()) == sorted(str(tmp_path / f / "page.md") for f in ("docs", "docs2", "docs-old"))
    trailing = pipeline.ingest(str(tmp_path / "docs") + "/")  # a trailing separator changes nothing
    assert trailing.removed_sources == () and len(pipeline.sources()) == 3
    # removing the folder removes its files only
    assert pipeline.match_sources(tmp_path / "docs") == [str(tmp_path / "docs" / "page.md")]
    assert pipeline.remove_source(tmp_path / "docs") == 1
    assert sorted(pipeline.sources()) == sorted(str(tmp_path / f / "page.md") for f in ("docs2", "docs-old"))


# ---------------------------------------------------------------------- a file that now loads nothing


@pytest.mark.parametrize(("name", "empty"), [("rows.jsonl", ""), ("rows.jsonl", "\n\n"), ("table.csv", "name,text\n")])
def test_a_file_that_now_loads_nothing_loses_its_old_chunks(tmp_path: Path, name: str, empty: str) -> None:
    path = tmp_path / name
    content = {"rows.jsonl": '{"text": "a row"}\n', "table.csv": "name,text\nx,a row\n"}[name]
    path.write_text(content, encoding="utf-8")
    pipeline = build()
    pipeline.ingest(path)
    assert pipeline.store.count("default") >= 1
    path.write_text(empty, encoding="utf-8")
    again = pipeline.ingest(path)
    assert again.removed_sources == (str(path),) and again.removed >= 1
    assert pipeline.store.count("default") == 0 and pipeline.sources() == []
    # in a folder too
    path.write_text(content, encoding="utf-8")
    pipeline.ingest(tmp_path)
    path.write_text(empty, encoding="utf-8")
    assert pipeline.ingest(tmp_path).removed_sources == (str(path),)
    assert pipeline.store.count("default") == 0

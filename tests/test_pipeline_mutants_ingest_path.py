"""The ingest path's bookkeeping, seen from outside: store calls, the router, held and staged sources.

Written against the mutants of ``pipeline.py`` that the rest of the suite let
through when the ingest path (``_ingest_target``, ``_SourceWriter``,
``_IngestRun``) and the assembly were measured: the read-ahead of stored states
in batches (a folder longer than one batch), the check that the ``auto`` loader
routes sources, and what a re-ingest leaves in the store. Real files, the real
memory store and hash embedder; a store subclass only counts calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import ragloom.pipeline
from ragloom import ConfigError, Pipeline, Registry, make_plugin_manager
from ragloom.stores.memory import MemoryStore


class CountingStore(MemoryStore):
    """The memory store, recording the sources each ``source_states`` call asks for."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[list[str]] = []

    def source_states(self, namespace: str, sources: Any) -> Any:
        self.lookups.append(list(sources))
        return super().source_states(namespace, sources)


def build(store: MemoryStore | None = None, registry: Registry | None = None) -> Pipeline:
    builder = Pipeline.builder(registry=registry).chunker("recursive", size=200, overlap=0).embedder("hash", dim=32)
    return builder.store(store if store is not None else MemoryStore()).build()


def numbered(folder: Path, count: int) -> list[str]:
    """``count`` one-line text files ``f00.txt`` ... in ``folder``; their paths in the order a folder is read."""
    folder.mkdir()
    for i in range(count):
        (folder / f"f{i:02d}.txt").write_text(f"file number {i} of the folder.", encoding="utf-8")
    return [str(folder / f"f{i:02d}.txt") for i in range(count)]


# ---------------------------------------------------------------------- read-ahead of stored states


def test_a_folder_longer_than_one_read_ahead_batch_reads_its_states_batch_by_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One ``source_states`` call per batch of files, each asking for exactly that batch's files.

    The batch is 512 files; it is made 4 here so that ten files span three batches
    (4 + 4 + 2) instead of writing more than a thousand files.
    """
    monkeypatch.setattr(ragloom.pipeline, "_STATE_BATCH", 4)
    files = numbered(tmp_path / "docs", 10)
    store = CountingStore()
    pipeline = build(store)
    assert pipeline.ingest(tmp_path / "docs").sources == 10
    assert store.lookups == [files[0:4], files[4:8], files[8:10]]
    store.lookups.clear()
    again = pipeline.ingest(tmp_path / "docs")
    assert again.unchanged_sources == 10 and again.chunks == 0
    assert store.lookups == [files[0:4], files[4:8], files[8:10]], "an unchanged folder reads its states the same way"


# ---------------------------------------------------------------------- the auto loader must route sources


def test_an_auto_loader_that_does_not_route_sources_is_refused_naming_its_class() -> None:
    """``[loaders]`` reach every file through the registered ``auto`` loader; one that cannot route is a ConfigError."""

    class Flat:
        """A loader with ``load`` only: no ``expand``, ``name_for`` or ``get``."""

        def load(self, source: str) -> list[Any]:
            return []

    registry = Registry(make_plugin_manager(load_entry_points=False))
    info = registry.get("loader", "auto")
    object.__setattr__(info, "factory", lambda config, context: Flat())
    with pytest.raises(ConfigError) as raised:
        build(registry=registry)
    assert str(raised.value) == "the 'auto' loader (Flat) must route sources: expand(), name_for() and get()"

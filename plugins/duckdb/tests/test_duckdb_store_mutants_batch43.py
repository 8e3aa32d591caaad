"""The DuckDB store's refusals and quiet paths beyond the shared contract: a filter value that is not valid Unicode and
one out of range (its reason cut at 200 characters), a checkpoint of a closed in-memory or read-only store (nothing to
do), a checkpoint that fails (named in the StoreError), the mirror loaded from the file without a deprecation warning,
and the configured BM25 parameters reaching the keyword index (written against the surviving mutants of ``store.py``)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import pytest
from duckdb_writes import NS
from duckdb_writes import commit_source as _commit
from duckdb_writes import seeded_vectors as _vectors

from ragloom.filters import parse_filter
from ragloom.plugin import BM25Config, BM25Index, FilterError, StoreError
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig
from ragloom_duckdb import checkpoint as checkpoints
from ragloom_duckdb import store as store_module


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "store.duckdb"


# ---------------------------------------------------------------------- filters


def test_a_filter_value_that_is_not_valid_unicode_is_refused_with_its_reason(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        query = _vectors(1, seed=2)[0]
        for call in (
            lambda flt: store.search(NS, query, top_k=3, filter=flt),
            lambda flt: store.keyword_search(NS, "word", top_k=3, filter=flt),
            lambda flt: store.delete(NS, flt),
        ):
            with pytest.raises(FilterError) as info:
                call(parse_filter({"source": "/a\ud800.md"}))
            assert str(info.value) == "filter value is not valid Unicode (a lone surrogate)"
            assert isinstance(info.value.__cause__, UnicodeEncodeError)
        assert store.count(NS) == 2


def test_an_out_of_range_reason_is_cut_at_200_characters(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)
        with pytest.raises(FilterError) as info:
            store.delete(NS, parse_filter({"n": 10**400}))
        assert str(info.value) == "filter value out of range: int too large to convert to float"

        reason = "".join(f"{i:03d}" for i in range(100))  # 300 characters, each cut point tells itself apart

        def refusing(node: object) -> tuple[str, list[object]]:
            raise ValueError(reason)  # injected: a refusal with a reason longer than the message keeps

        monkeypatch.setattr(store_module, "filter_sql", refusing)
        with pytest.raises(FilterError) as info:
            store.delete(NS, parse_filter({"n": 1}))
        assert str(info.value) == "filter value out of range: " + reason[:200]
        assert isinstance(info.value.__cause__, ValueError)
        assert store.count(NS) == 2


# ---------------------------------------------------------------------- checkpoint


def test_a_checkpoint_of_a_closed_memory_or_read_only_store_has_nothing_to_do(path: Path) -> None:
    memory = DuckDBStore(path=":memory:")
    _commit(memory, "/a.md", 1, seed=1)
    memory.checkpoint()
    memory.close()
    memory.checkpoint()  # no file, nothing to write: not "closed"
    with pytest.raises(StoreError, match="is closed"):
        memory.count(NS)

    with DuckDBStore(path=path) as writer:
        _commit(writer, "/a.md", 1, seed=1)
    reader = DuckDBStore(DuckDBStoreConfig(read_only=True), path=path)
    reader.checkpoint()
    reader.close()
    reader.checkpoint()  # read-only: never writes the WAL, closed or not
    with pytest.raises(StoreError, match="is closed"):
        reader.count(NS)

    writable = DuckDBStore(path=path)
    writable.close()
    with pytest.raises(StoreError, match="is closed"):  # a file store that could checkpoint says it is closed
        writable.checkpoint()


def test_a_failed_checkpoint_is_a_store_error_naming_the_step(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 2, seed=1)

        def failing(cursor: object, file: str) -> None:
            raise duckdb.IOException("disk went away")  # injected

        monkeypatch.setattr(checkpoints, "checkpoint", failing)
        with pytest.raises(StoreError) as info:
            store.checkpoint()
        assert str(info.value) == f"DuckDB store {path}: checkpoint failed: disk went away"
        monkeypatch.undo()
        store.checkpoint()
        assert store.count(NS) == 2


# ---------------------------------------------------------------------- the mirror and the keyword index


def test_the_mirror_loads_from_the_file_without_a_deprecation_warning(path: Path) -> None:
    with DuckDBStore(path=path) as store:
        chunks = _commit(store, "/a.md", 3, seed=1)
    vectors = _vectors(3, seed=1)
    with DuckDBStore(path=path) as store, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = store.search(NS, vectors[1], top_k=1)  # the first search loads the mirror from the file
        assert [r.chunk_id for r in found] == [chunks[1].id]
    assert [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)] == []


def test_the_configured_bm25_parameters_score_keyword_search(path: Path) -> None:
    config = BM25Config(k1=0.3, b=0.0)
    texts = ["lamp lamp lamp oil", "lamp wick", "oil and a long list of other words about a lamp and nothing else"]
    with DuckDBStore(DuckDBStoreConfig(bm25=config), path=path) as store:
        chunks = _commit(store, "/a.md", 3, seed=1, texts=texts)
        hits = store.keyword_search(NS, "lamp", top_k=3)
    keys = [c.id for c in chunks]
    expected, default = BM25Index(config), BM25Index()
    expected.add(keys, texts)
    default.add(keys, texts)
    want = expected.search("lamp", top_k=3)
    assert not np.allclose([s for _, s in want], [s for _, s in default.search("lamp", top_k=3)], rtol=1e-3)  # they matter
    assert [r.chunk_id for r in hits] == [k for k, _ in want]
    assert np.allclose([r.score for r in hits], [s for _, s in want], rtol=1e-6)


def test_a_term_only_deleted_chunks_held_counts_in_the_ceiling_as_an_absent_one(path: Path) -> None:
    """The keyword index kept in step with a delete gives the ceiling a fresh build gives (the same visible chunks):
    a term no visible chunk contains counts as much as the rarest term, whether or not a deleted chunk held it."""
    with DuckDBStore(path=path) as store:
        _commit(store, "/a.md", 1, seed=1, texts=["alpha beta"])
        _commit(store, "/b.md", 1, seed=2, texts=["gamma delta gamma"])
        assert store.keyword_ceiling(NS, "alpha") < store.keyword_ceiling(NS, "zebra")  # built while alpha is visible
        assert store.delete(NS, parse_filter({"source": "/a.md"})) == 1
        kept_in_step = store.keyword_ceiling(NS, "alpha"), store.keyword_ceiling(NS, "zebra")
    with DuckDBStore(path=path) as store:
        rebuilt = store.keyword_ceiling(NS, "alpha"), store.keyword_ceiling(NS, "zebra")
    assert kept_in_step == rebuilt
    assert kept_in_step[0] == kept_in_step[1] > 0

    # the index on its own: tests/retrieval/test_keyword_mutants_ceiling.py

"""The Arrow batch a DuckDB write session inserts: its columns have the table's types, so a namespace that is not a str
never reaches the file under a text spelling of it and a chunk index past int32 is refused with a StoreError before
the insert (written against the surviving mutants of ``batch_table``)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from duckdb_writes import seeded_vectors

from ragloom.errors import StoreError
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore


def test_a_namespace_that_is_not_text_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    """The namespace 7 (an int) fails the flush with a StoreError (Arrow refuses an int in a string column) and the
    transaction stores nothing: neither 7 nor "7" has rows. Inferring the column's type instead would make it an
    integer column that DuckDB casts to the text "7" on insert: the rows would silently land in namespace "7"."""
    with DuckDBStore(path=tmp_path / "store.duckdb") as store:
        with pytest.raises(StoreError, match="committing /a.md failed: a value does not fit its column"):
            with store.session(7) as session:  # type: ignore[arg-type]
                stage = session.stage("/a.md")
                stage.write(make_chunks("/a.md", 2), seeded_vectors(2, 1))
                stage.commit()
        assert store.count("7") == 0
        assert store.sources("7") == []
        # a text namespace still writes
        with store.session("7") as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 2), seeded_vectors(2, 1))
            stage.commit()
        assert store.count("7") == 2
        assert store.sources("7") == ["/a.md"]


def test_a_chunk_index_past_int32_is_refused_and_the_store_keeps_working(tmp_path: Path) -> None:
    """A chunker plugin's absurd index: a StoreError naming the store, the source and the column's limit, no rows."""
    path = tmp_path / "store.duckdb"
    with DuckDBStore(path=path) as store:
        chunks = [attrs.evolve(c, index=2**31) for c in make_chunks("/a.md", 1)]
        with pytest.raises(StoreError) as raised:
            with store.session("ns") as session:
                stage = session.stage("/a.md")
                stage.write(chunks, seeded_vectors(1, 1))
                stage.commit()
        message = str(raised.value)
        assert message.startswith(f"DuckDB store {path}: committing /a.md failed: a value does not fit its column (")
        assert "2147483648" in message
        assert store.count("ns") == 0
        with store.session("ns") as session:
            stage = session.stage("/a.md")
            stage.write([attrs.evolve(c, index=2**31 - 1) for c in make_chunks("/a.md", 1)], seeded_vectors(1, 1))
            stage.commit()
        assert store.count("ns") == 1

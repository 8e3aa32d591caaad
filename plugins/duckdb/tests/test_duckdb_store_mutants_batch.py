"""The Arrow batch a DuckDB write session inserts: its namespace column is text, so a namespace that is not a str
never reaches the file under a text spelling of it (written against the surviving mutants of ``batch_table``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from duckdb_writes import seeded_vectors

from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore


def test_a_namespace_that_is_not_text_is_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    """The namespace 7 (an int) fails the flush with a TypeError (Arrow refuses an int in a string column) and the
    transaction stores nothing: neither 7 nor "7" has rows. Inferring the column's type instead would make it an
    integer column that DuckDB casts to the text "7" on insert: the rows would silently land in namespace "7"."""
    with DuckDBStore(path=tmp_path / "store.duckdb") as store:
        with pytest.raises(TypeError, match="Expected bytes, got a 'int' object"):
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

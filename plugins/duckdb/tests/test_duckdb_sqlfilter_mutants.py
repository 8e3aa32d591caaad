"""The DuckDB SQL translation of "no filter" (written against the surviving mutants of ``sqlfilter.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore
from ragloom_duckdb.sqlfilter import filter_sql


def test_no_filter_is_true_without_parameters_and_a_delete_without_filter_empties_the_namespace(tmp_path: Path) -> None:
    for sql, params in (filter_sql(None), filter_sql(None, metadata_column="m")):
        assert (sql.lower(), params) == ("true", [])  # SQL's TRUE in any letter case
    with DuckDBStore(path=tmp_path / "s.duckdb") as store:
        for namespace, count in (("ns", 3), ("other", 2)):
            with store.session(namespace) as session:
                stage = session.stage("/a.md")
                stage.write(make_chunks("/a.md", count), np.ones((count, 4), dtype=np.float32))
                stage.commit()
        assert store.delete("ns", None) == 3
        assert store.count("ns") == 0 and store.count("other") == 2

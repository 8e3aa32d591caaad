"""``memory_limit``: DuckDB's own memory stays capped, and a store larger than the cap still loads and answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragloom import ConfigError, Pipeline
from ragloom.testing import make_chunks
from ragloom_duckdb import DuckDBStore, DuckDBStoreConfig

NS = "t"
DIM = 384


def _setting(store: DuckDBStore, name: str) -> str:
    return str(store._cursor().execute(f"SELECT current_setting('{name}')").fetchone()[0])


def test_the_limit_reaches_duckdb_and_spills_beside_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with DuckDBStore(DuckDBStoreConfig(path=str(path), memory_limit="64MB")) as store:
        assert _setting(store, "memory_limit") == "61.0 MiB"  # DuckDB reports 64 MB in MiB
        assert _setting(store, "temp_directory") == str(path) + ".tmp"
    with DuckDBStore(DuckDBStoreConfig(path=str(tmp_path / "d.duckdb"))) as store:
        assert _setting(store, "memory_limit") == "488.2 MiB"  # the default, 512 MB
    with DuckDBStore(DuckDBStoreConfig(path=str(tmp_path / "n.duckdb"), memory_limit=None)) as store:
        assert _setting(store, "memory_limit") != "488.2 MiB"  # DuckDB's own default


def test_a_store_larger_than_its_memory_limit_is_searched_exactly(tmp_path: Path) -> None:
    """~47 MB of vectors and text under a 32 MB limit: loading the in-process mirror must stream, not materialise the table."""
    path = str(tmp_path / "big.duckdb")
    rng = np.random.default_rng(7)
    per_source, sources = 2_000, 14
    vectors = rng.standard_normal((per_source * sources, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with DuckDBStore(DuckDBStoreConfig(path=path, memory_limit="32MB")) as store:
        for s in range(sources):
            chunks = make_chunks(f"/doc{s}.md", per_source, texts=[f"text {s}-{i} " + "x" * 400 for i in range(per_source)])
            with store.session(NS) as session:
                stage = session.stage(chunks[0].source)
                stage.write(chunks, vectors[s * per_source : (s + 1) * per_source])
                stage.commit()
    with DuckDBStore(DuckDBStoreConfig(path=path, memory_limit="32MB")) as store:  # a new process's view: the mirror loads from the file
        for probe in (0, 15_555, 27_999):
            query = vectors[probe]
            results = store.search(NS, query, top_k=3)
            expected = np.argsort(-(vectors @ query), kind="stable")[:3]
            assert [r.text.split(" ")[1] for r in results] == [f"{i // per_source}-{i % per_source}" for i in expected]
            assert results[0].score == pytest.approx(1.0, abs=1e-5)
        assert store.count(NS) == per_source * sources


@pytest.mark.parametrize("bad", ["lots", "512", "-1GB", "1 PB"])
def test_a_malformed_memory_limit_is_a_config_error(tmp_path: Path, bad: str) -> None:
    config = tmp_path / "ragloom.toml"
    config.write_text(f'[embedder]\ntype = "hash"\n\n[store]\ntype = "duckdb"\npath = "s.duckdb"\nmemory_limit = "{bad}"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="memory_limit"):
        Pipeline.from_toml(config)

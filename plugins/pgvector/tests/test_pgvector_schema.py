"""Schema versioning, the pgvector extension check, the plugin's registration and config."""

from __future__ import annotations

import os
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ragloom.config import Secret
from ragloom.errors import ConfigError, StoreError
from ragloom_pgvector import SCHEMA_VERSION, PgVectorStore, PgVectorStoreConfig


def test_new_schema_is_created_at_the_current_version(pg: Any, pg_schema: str) -> None:
    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        assert store.stats("x")["schema_version"] == SCHEMA_VERSION
    rows = pg.execute(f"SELECT version, package FROM {pg_schema}.schema_version ORDER BY version")
    assert rows == [(version, "ragloom-pgvector") for version in range(1, SCHEMA_VERSION + 1)]
    # opening again applies nothing twice
    PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn).close()
    assert len(pg.execute(f"SELECT * FROM {pg_schema}.schema_version")) == SCHEMA_VERSION


def test_a_newer_schema_is_refused(pg: Any, pg_schema: str) -> None:
    PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn).close()
    pg.execute(f"INSERT INTO {pg_schema}.schema_version (version, package) VALUES (%s, 'future')", [SCHEMA_VERSION + 1])
    with pytest.raises(StoreError, match="newer than this ragloom-pgvector understands"):
        PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)


def test_a_schema_with_foreign_tables_is_refused(pg: Any, pg_schema: str) -> None:
    pg.execute(f"CREATE SCHEMA {pg_schema}; CREATE TABLE {pg_schema}.chunks (x int)")
    with pytest.raises(StoreError, match="no ragloom schema_version"):
        PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)


def test_missing_extension_without_privilege_names_what_the_dba_must_run(pg: Any) -> None:
    database, role = f"noext_{os.getpid()}", f"plain_{os.getpid()}"
    pg.execute(f"DROP DATABASE IF EXISTS {database}")
    pg.execute(f"DROP ROLE IF EXISTS {role}")
    pg.execute(f"CREATE ROLE {role} LOGIN")
    pg.execute(f"CREATE DATABASE {database} OWNER {role}")
    try:
        params = conninfo_to_dict(pg.dsn)
        params.update(dbname=database, user=role)
        dsn = make_conninfo(**params)
        with pytest.raises(StoreError) as caught:
            PgVectorStore(PgVectorStoreConfig(schema="ragloom"), dsn=dsn)
        assert "CREATE EXTENSION vector" in str(caught.value) and database in str(caught.value)
        with pytest.raises(StoreError, match="CREATE EXTENSION vector"):
            PgVectorStore(PgVectorStoreConfig(schema="ragloom", create_extension=False), dsn=dsn)
        # once a superuser installed it, the same role opens the store and creates its schema
        admin = conninfo_to_dict(pg.dsn)
        admin.update(dbname=database)
        import psycopg

        with psycopg.connect(make_conninfo(**admin), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        with PgVectorStore(PgVectorStoreConfig(schema="ragloom"), dsn=dsn) as store:
            assert store.count("x") == 0
    finally:
        pg.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
        pg.execute(f"DROP ROLE IF EXISTS {role}")


def test_unreachable_server_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="cannot open"):
        PgVectorStore(PgVectorStoreConfig(connect_timeout=2), dsn="postgresql://nobody@127.0.0.1:1/none")


def test_dsn_comes_from_the_environment_never_from_toml(pg: Any, pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragloom.plugins import Registry

    registry = Registry()
    assert registry.get("store", "pgvector").name == "pgvector"
    with pytest.raises(ConfigError):
        registry.structure_config("store", "pgvector", {"dsn": "postgresql://user:secret@host/db"}, path="$.store")
    config = registry.structure_config("store", "pgvector", {"dsn": {"env": "MY_PG"}, "schema": pg_schema}, path="$.store")
    assert config.dsn == Secret("MY_PG") and "secret" not in repr(config)
    monkeypatch.delenv("MY_PG", raising=False)
    with pytest.raises(ConfigError, match="MY_PG"):
        PgVectorStore(config)
    monkeypatch.setenv("MY_PG", pg.dsn)
    with PgVectorStore(config) as store:
        assert store.count("x") == 0


def test_without_prepared_statements_for_pgbouncer_transaction_mode(pg: Any, pg_schema: str) -> None:
    import numpy as np

    from ragloom.types import Chunk

    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema, prepared_statements=False), dsn=pg.dsn) as store:
        chunk = Chunk(id="d:0", document_id="d", index=0, text="lamp", start=0, end=4, source="/p.md")
        for _ in range(8):  # past psycopg's prepare threshold (5)
            with store.session("ns") as session:
                stage = session.stage("/p.md")
                stage.write([chunk], np.ones((1, 4), dtype=np.float32))
                stage.commit()
            assert [r.chunk_id for r in store.search("ns", np.ones(4), top_k=3)] == ["d:0"]
        with store._pool.connection() as conn:
            assert conn.prepare_threshold is None
            assert conn.execute("SELECT count(*) FROM pg_prepared_statements").fetchone()[0] == 0

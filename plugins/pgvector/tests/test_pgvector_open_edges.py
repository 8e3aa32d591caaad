"""What opening a store tells the user: the server it names, and a server that never answers."""

from __future__ import annotations

import os
import socket
import threading
from typing import Any

import numpy as np
import psycopg
import pytest

from ragloom.errors import StoreError
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig


def test_errors_name_the_server_the_store_is_on(pg: Any, pg_schema: str) -> None:
    with psycopg.connect(pg.dsn) as conn:
        user, host, dbname = conn.info.user, conn.info.host, conn.info.dbname
    store = PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn)
    store.close()
    with pytest.raises(StoreError) as raised:
        store.search("ns", np.ones(4, dtype=np.float32), top_k=1)
    assert f"PostgreSQL store {user}@{host}/{dbname} schema {pg_schema}" in str(raised.value)


def test_a_server_that_never_answers_fails_the_open_after_connect_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_and_stay_silent() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_and_stay_silent, daemon=True)
    thread.start()
    try:
        port = listener.getsockname()[1]
        with pytest.raises(StoreError, match="cannot open"):
            PgVectorStore(PgVectorStoreConfig(connect_timeout=1), dsn=f"postgresql://nobody@127.0.0.1:{port}/db")
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def test_a_role_allowed_to_creates_the_extension_itself(pg: Any) -> None:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    database = f"withext_{os.getpid()}"
    pg.execute(f"DROP DATABASE IF EXISTS {database}")
    pg.execute(f"CREATE DATABASE {database}")
    try:
        params = conninfo_to_dict(pg.dsn)
        params.update(dbname=database)
        dsn = make_conninfo(**params)
        with PgVectorStore(PgVectorStoreConfig(schema="ragloom"), dsn=dsn) as store:  # create_extension = true (default)
            assert store.count("x") == 0
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)
    finally:
        pg.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def test_a_write_of_another_dimension_names_both_and_the_store(pg: Any, pg_schema: str) -> None:
    from ragloom.errors import DimensionMismatchError
    from ragloom.testing import make_chunks

    with PgVectorStore(PgVectorStoreConfig(schema=pg_schema), dsn=pg.dsn) as store:
        with store.session("ns") as session:
            stage = session.stage("/a.md")
            stage.write(make_chunks("/a.md", 1), np.ones((1, 8), dtype=np.float32))
            stage.commit()
        with store.session("ns") as session, pytest.raises(DimensionMismatchError) as raised:
            session.stage("/b.md").write(make_chunks("/b.md", 1), np.ones((1, 4), dtype=np.float32))
    assert (raised.value.store_dim, raised.value.embedder_dim) == (8, 4)
    assert str(raised.value).startswith("PostgreSQL store ") and f"schema {pg_schema} holds vectors of dimension 8" in str(raised.value)

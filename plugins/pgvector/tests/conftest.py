"""A private PostgreSQL with pgvector for the plugin's tests (``pgserver``), or ``RAGLOOM_TEST_PG_DSN``.

Each test gets its own PostgreSQL schema, so tests share one server and stay
isolated; the server starts once per test session (about 10 s).
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_counter = itertools.count()


class PgServer:
    """The test server: its DSN, and how to restart it (pgserver only)."""

    def __init__(self, dsn: str, server: Any = None):
        self.dsn = dsn
        self.server = server

    def restart(self) -> None:
        """Restart PostgreSQL (every connection is cut)."""
        if self.server is None:
            pytest.fail("restarting needs the pgserver-managed server (unset RAGLOOM_TEST_PG_DSN)")
        from pgserver._commands import pg_ctl

        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=self.server.pgdata, user=self.server.system_user, timeout=60)
        self.server.ensure_postgres_running()

    def execute(self, statement: str, params: Any = None) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    external = os.environ.get("RAGLOOM_TEST_PG_DSN")
    if external:
        yield PgServer(external)
        return
    import pgserver

    # not under pytest's basetemp: its 0700 folders keep out the unprivileged user pgserver runs PostgreSQL as (under root)
    pgdata = Path(tempfile.mkdtemp(prefix="ragloom-pg-"))
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    handle = PgServer(server.get_uri(), server)
    # a throwaway test server: durability to the disk is not under test (a killed client is)
    for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
        handle.execute(f"ALTER SYSTEM SET {setting}")
    handle.execute("SELECT pg_reload_conf()")
    try:
        yield handle
    finally:
        try:
            server.cleanup()
        except Exception:  # noqa: BLE001 - pgserver races with a server that already stopped
            pass
        shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture
def pg_schema(pg: PgServer) -> Iterator[str]:
    """A fresh schema name, dropped after the test."""
    name = f"t_{os.getpid()}_{next(_counter)}"
    yield name
    pg.execute(f"SET lock_timeout = '20s'; DROP SCHEMA IF EXISTS {name} CASCADE")

"""One local Ray cluster (2 CPUs, no dashboard) and one private PostgreSQL (pgserver) per test session.

The DSN is in the environment before ``ray.init``, so the workers (which
build the pgvector store from the pipeline config) inherit it.
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

DSN_VARIABLE = "RAGLOOM_TEST_RAY_PG_DSN"
_counter = itertools.count()


def _execute(dsn: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(statement)


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A throwaway PostgreSQL 16 + pgvector (as plugins/pgvector/tests starts it)."""
    import pgserver

    # not under pytest's basetemp: its 0700 folders keep out the unprivileged user pgserver runs PostgreSQL as (under root)
    pgdata = Path(tempfile.mkdtemp(prefix="ragloom-ray-pg-"))
    server = pgserver.get_server(pgdata, cleanup_mode="delete")
    dsn = server.get_uri()
    for setting in ("fsync = off", "synchronous_commit = off", "full_page_writes = off"):
        _execute(dsn, f"ALTER SYSTEM SET {setting}")
    _execute(dsn, "SELECT pg_reload_conf()")
    try:
        yield dsn
    finally:
        try:
            server.cleanup()
        except Exception:  # noqa: BLE001 - pgserver races with a server that already stopped
            pass
        shutil.rmtree(pgdata, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster(pg_dsn: str) -> Iterator[Any]:
    """``ray.init(num_cpus=2)``: a local cluster for the whole session (about 5 s to start)."""
    import ray

    os.environ[DSN_VARIABLE] = pg_dsn
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture
def pg_schema(pg_dsn: str) -> Iterator[str]:
    """A fresh PostgreSQL schema, dropped after the test."""
    name = f"ray_{os.getpid()}_{next(_counter)}"
    yield name
    _execute(pg_dsn, f"DROP SCHEMA IF EXISTS {name} CASCADE")

"""The pgvector store runs the shared store contract on a real PostgreSQL (pgserver)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ragloom.testing import PersistentStoreContract
from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig


class TestPgVectorContract(PersistentStoreContract):
    @pytest.fixture
    def store(self, pg: Any, pg_schema: str) -> Iterator[PgVectorStore]:
        self.dsn = pg.dsn
        self.schema = pg_schema
        self.opened: list[PgVectorStore] = []
        yield self._open()
        for opened in self.opened:
            opened.close()

    def _open(self) -> PgVectorStore:
        store = PgVectorStore(PgVectorStoreConfig(schema=self.schema, pool_max=4), dsn=self.dsn)
        self.opened.append(store)
        return store

    def child_store_code(self, store: Any) -> str:
        return (
            "from ragloom_pgvector import PgVectorStore, PgVectorStoreConfig\n"
            f"store = PgVectorStore(PgVectorStoreConfig(schema={self.schema!r}), dsn={self.dsn!r})"
        )

    def reopen(self, store: Any) -> Any:
        store.close()
        return self._open()

"""Conformance suites shared by ragloom packages (needs pytest and hypothesis).

:class:`StoreContract` is the suite every store runs: a mixin of pytest tests
that a store's test module subclasses, providing a ``store`` fixture (a fresh,
empty store)::

    import pytest
    from ragloom.testing import StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            store = MyStore(path=tmp_path / "db")
            yield store
            store.close()

:class:`ChunkerContract` is the suite every chunker runs (hypothesis-driven:
exact offsets, order, coverage, size, overlap, determinism)::

    from ragloom.testing import ChunkerContract

    class TestMyChunker(ChunkerContract):
        max_size = 400

        def make_chunker(self):
            return MyChunker(MyConfig(size=400))
"""

from ragloom.testing.chunker_contract import ChunkerContract
from ragloom.testing.store_contract import PersistentStoreContract, StoreContract, make_chunks

__all__ = ["ChunkerContract", "PersistentStoreContract", "StoreContract", "make_chunks"]

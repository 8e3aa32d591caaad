"""Test helpers shared by ragloom packages.

:class:`StoreContract` is the conformance suite every store runs: a mixin of
pytest tests that a store's test module subclasses, providing a ``store``
fixture (a fresh, empty store)::

    import pytest
    from ragloom.testing import StoreContract

    class TestMyStore(StoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            store = MyStore(path=tmp_path / "db")
            yield store
            store.close()
"""

from ragloom.testing.store_contract import StoreContract, make_chunks

__all__ = ["StoreContract", "make_chunks"]

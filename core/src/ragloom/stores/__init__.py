"""Stores: the contract and the built-in ``memory`` store."""

from ragloom.stores.base import KEYWORD_SEARCH, VECTORS, SourceStage, SourceState, Store, WriteSession, normalize_rows
from ragloom.stores.memory import MemoryStore, MemoryStoreConfig

__all__ = [
    "KEYWORD_SEARCH",
    "VECTORS",
    "MemoryStore",
    "MemoryStoreConfig",
    "SourceStage",
    "SourceState",
    "Store",
    "WriteSession",
    "normalize_rows",
]

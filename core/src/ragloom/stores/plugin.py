"""Default plugin: the built-in stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragloom.hookspecs import hookimpl
from ragloom.stores.memory import MemoryStore, MemoryStoreConfig

if TYPE_CHECKING:
    from ragloom.plugins import BuildContext


def _memory(config: MemoryStoreConfig, context: BuildContext) -> MemoryStore:
    """In-process numpy store with exact cosine search."""
    return MemoryStore(config)


@hookimpl
def register_stores(register):  # type: ignore[no-untyped-def]
    register("memory", _memory, config=MemoryStoreConfig)

"""Per-source write locks: requests for one source (or overlapping folders) run one at a time."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ragloom.loaders.base import is_url


def _overlap(a: str, b: str) -> bool:
    if a == b:
        return True
    if is_url(a) or is_url(b):
        return False
    return a.startswith(b.rstrip(os.sep) + os.sep) or b.startswith(a.rstrip(os.sep) + os.sep)


class SourceLocks:
    """``async with locks.hold(source)``: waits while a write to that source, a folder holding it or a
    source inside it is running. Writes to unrelated sources proceed side by side."""

    def __init__(self) -> None:
        self._active: list[str] = []
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def hold(self, source: str) -> AsyncIterator[None]:
        async with self._changed:
            await self._changed.wait_for(lambda: not any(_overlap(source, other) for other in self._active))
            self._active.append(source)
        try:
            yield
        finally:
            async with self._changed:
                self._active.remove(source)
                self._changed.notify_all()

    def busy(self) -> list[str]:
        """Sources being written now."""
        return list(self._active)

"""The async path: ``aingest``, ``aquery``, ``aremove_source``, ``astats`` and the bridge HTTP components use.

Blocking work (chunking, numpy, DuckDB, torch) runs in worker threads, so the
event loop stays free. While it runs, the worker's context remembers the
event loop it came from (:data:`_LOOP`): an HTTP-backed component called in
that worker (OpenAI-compatible embedder and LLM, Cohere, the web loader) sends its request
with its ``httpx.AsyncClient`` on that loop (:func:`bridge`) instead of its
blocking client, so requests of concurrent queries share one async
connection pool. Outside the async path nothing changes.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import httpx

    from ragloom.pipeline import Pipeline, ProgressCallback
    from ragloom.types import IngestResult, Result

T = TypeVar("T")

#: The event loop whose worker thread this context runs in (None off the async path).
_LOOP: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar("ragloom_loop", default=None)


async def run_blocking(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``func(*args, **kwargs)`` in a worker thread whose HTTP calls go out on this event loop."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    context.run(_LOOP.set, loop)
    call = functools.partial(context.run, func, *args, **kwargs)
    return await loop.run_in_executor(None, call)


def bridge(make: Callable[[], Coroutine[Any, Any, T]]) -> tuple[bool, T | None]:
    """Run ``make()`` on the async path's event loop when called from one of its workers.

    Returns ``(True, value)`` when it ran there, ``(False, None)`` otherwise (the
    caller then uses its blocking client).
    """
    loop = _LOOP.get()
    if loop is None or loop.is_closed() or _on_loop_thread(loop):
        return False, None
    return True, asyncio.run_coroutine_threadsafe(make(), loop).result()


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class AsyncClients:
    """One ``httpx.AsyncClient`` per event loop, made on first use (or the injected one)."""

    def __init__(self, factory: Callable[[], httpx.AsyncClient], *, injected: httpx.AsyncClient | None = None):
        self._factory = factory
        self._injected = injected
        self._clients: dict[int, tuple[asyncio.AbstractEventLoop, httpx.AsyncClient]] = {}
        self._lock = threading.Lock()

    def get(self) -> httpx.AsyncClient:
        """The client for the running loop."""
        if self._injected is not None:
            return self._injected
        loop = asyncio.get_running_loop()
        with self._lock:
            for key, (other, _client) in list(self._clients.items()):
                if other.is_closed():
                    del self._clients[key]
            entry = self._clients.get(id(loop))
            if entry is None or entry[0] is not loop:
                entry = (loop, self._factory())
                self._clients[id(loop)] = entry
            return entry[1]

    async def aclose(self) -> None:
        """Close the client of the running loop (an injected client belongs to its owner)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._clients.pop(id(loop), None)
        if entry is not None:
            await entry[1].aclose()


# ---------------------------------------------------------------------- pipeline methods


async def aingest(
    pipeline: Pipeline,
    source: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    *,
    loader: str | None = None,
    tags: Iterable[str] = (),
    progress: ProgressCallback | None = None,
    chunker: Any = None,
) -> IngestResult:
    """:meth:`Pipeline.ingest` in a worker thread (its HTTP calls on this loop), with the same per-call ``chunker``."""
    return await run_blocking(pipeline.ingest, source, loader=loader, tags=tuple(tags), progress=progress, chunker=chunker)


async def aquery(pipeline: Pipeline, text: str, **options: Any) -> list[Result]:
    """:meth:`Pipeline.query` in a worker thread (its HTTP calls on this loop), with the same options.

    ``top_k``, ``threshold``, ``filter``, ``top_n``, ``candidates``, ``options`` and the
    retriever's own per-query options (``lambda_mult=``, ``weights=`` ...) pass through unchanged.
    """
    return await run_blocking(pipeline.query, text, **options)


async def aremove_source(pipeline: Pipeline, source: str | os.PathLike[str]) -> int:
    """:meth:`Pipeline.remove_source` in a worker thread."""
    return await run_blocking(pipeline.remove_source, source)


async def astats(pipeline: Pipeline) -> dict[str, Any]:
    """:meth:`Pipeline.stats` in a worker thread."""
    return await run_blocking(pipeline.stats)


async def asources(pipeline: Pipeline) -> list[str]:
    """:meth:`Pipeline.sources` in a worker thread."""
    return await run_blocking(pipeline.sources)


async def aclose(pipeline: Pipeline) -> None:
    """Close the async HTTP clients of this loop, then the store (in a worker thread)."""
    for component in (pipeline.loaders, pipeline.embedder, pipeline.reranker, pipeline.llm, pipeline.retriever):
        closer: Callable[[], Awaitable[None]] | None = getattr(component, "aclose", None)
        if closer is not None:
            await closer()
    await asyncio.get_running_loop().run_in_executor(None, pipeline.close)

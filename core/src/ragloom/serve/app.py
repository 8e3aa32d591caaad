"""The Starlette app of ``ragloom serve``: one pipeline, its store, and the HTTP endpoints over them.

Queries run in worker threads side by side; writes (ingest, remove) to one
source run one at a time (:class:`SourceLocks`) while queries keep being
answered. Every ingest goes through the ``rag_ingest`` tool's handler, so the
same path confinement guards the HTTP API, the MCP server and agent tools.
"""

from __future__ import annotations

import hmac
import json
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ragloom import aio
from ragloom.loaders.base import is_url, resolve_source
from ragloom.pipeline import Pipeline, iter_results_as_dicts
from ragloom.serve.errors import HTTPError, error_body, status_for
from ragloom.serve.locks import SourceLocks
from ragloom.serve.openapi import openapi_schema
from ragloom.tools import rag_ingest_tool
from ragloom.types import Result

MAX_BODY_BYTES = 1 << 20
QUERY_FIELDS = {"query", "top_k", "threshold", "filter", "top_n"}
OPEN_PATHS = frozenset({"/health"})


def create_app(
    pipeline: Pipeline,
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] = (),
    allow_urls: bool = False,
    token: str | None = None,
    close_pipeline: bool = True,
) -> Starlette:
    """The HTTP API over ``pipeline``; ``token`` (if given) is required as ``Authorization: Bearer``."""
    roots = [os.fspath(root) for root in allowed_roots]
    ingest_tool = rag_ingest_tool(pipeline, allowed_roots=roots, allow_urls=allow_urls) if roots or allow_urls else None
    locks = SourceLocks()
    schema = openapi_schema(auth=token is not None)

    async def query(request: Request) -> Response:
        body = await _json_object(request)
        unknown = set(body) - QUERY_FIELDS
        if unknown:
            raise HTTPError(400, f"unknown field(s): {', '.join(sorted(unknown))}", kind="ValidationError")
        text = body.get("query")
        options = {k: body.get(k) for k in ("top_k", "threshold", "filter", "top_n")}
        _check_number(options, "top_k", int)
        _check_number(options, "top_n", int)
        _check_number(options, "threshold", (int, float))
        results, seconds = await aio.run_blocking(_timed_query, pipeline, text, options)
        timing = {"Server-Timing": f"pipeline;dur={seconds * 1000:.3f}"}
        return JSONResponse({"query": text, "results": list(iter_results_as_dicts(results))}, headers=timing)

    async def ingest(request: Request) -> Response:
        body = await _json_object(request)
        if ingest_tool is None:
            raise HTTPError(403, "ingest is disabled: start the server with --allow-root DIR (or --allow-urls)", kind="IngestDisabled")
        unknown = set(body) - {"source"}
        if unknown:
            raise HTTPError(400, f"unknown field(s): {', '.join(sorted(unknown))}", kind="ValidationError")
        source = body.get("source")
        if not isinstance(source, str) or not source.strip():
            raise HTTPError(400, "'source' must be a non-empty string", kind="ValidationError")
        async with locks.hold(_lock_key(pipeline, source)):
            result = await aio.run_blocking(ingest_tool.handler, {"source": source})
        return JSONResponse(result)

    async def remove(request: Request) -> Response:
        source = request.path_params["source"]
        async with locks.hold(_lock_key(pipeline, source)):
            removed = await aio.aremove_source(pipeline, source)
        return JSONResponse({"source": source, "removed": removed})

    async def sources(request: Request) -> Response:
        return JSONResponse({"sources": await aio.asources(pipeline)})

    async def stats(request: Request) -> Response:
        return JSONResponse(json.loads(json.dumps(await aio.astats(pipeline), default=str)))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "namespace": pipeline.namespace, "writing": locks.busy()})

    async def openapi(request: Request) -> Response:
        return JSONResponse(schema)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if close_pipeline:
            await aio.aclose(pipeline)

    routes = [
        Route("/query", _guard(query), methods=["POST"]),
        Route("/ingest", _guard(ingest), methods=["POST"]),
        Route("/sources/{source:path}", _guard(remove), methods=["DELETE"]),
        Route("/sources", _guard(sources), methods=["GET"]),
        Route("/stats", _guard(stats), methods=["GET"]),
        Route("/health", _guard(health), methods=["GET"]),
        Route("/openapi.json", _guard(openapi), methods=["GET"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return JSONResponse({"error": str(exc.detail), "type": kind, "source": None}, status_code=exc.status_code)

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={StarletteHTTPException: http_error})
    app.state.pipeline = pipeline
    app.state.token = token
    return app


def _timed_query(pipeline: Pipeline, text: Any, options: dict[str, Any]) -> tuple[list[Result], float]:
    """``pipeline.query`` and the seconds it took (the ``Server-Timing`` header's ``pipeline`` figure)."""
    start = time.perf_counter()
    results = pipeline.query(text, **options)
    return results, time.perf_counter() - start


def _guard(endpoint: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """Check the bearer token, and turn every exception into a JSON error answer."""

    async def guarded(request: Request) -> Response:
        try:
            _authorize(request)
            return await endpoint(request)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON answer
            headers = {"WWW-Authenticate": "Bearer"} if getattr(exc, "status", None) == 401 else None
            return JSONResponse(error_body(exc), status_code=status_for(exc), headers=headers)

    guarded.__name__ = endpoint.__name__
    return guarded


def _authorize(request: Request) -> None:
    token: str | None = request.app.state.token
    if token is None or request.url.path in OPEN_PATHS:
        return
    given = request.headers.get("authorization", "")
    scheme, _, value = given.partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
        raise HTTPError(401, "missing or wrong bearer token (Authorization: Bearer <token>)", kind="Unauthorized")


async def _json_object(request: Request) -> dict[str, Any]:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise HTTPError(413, f"request body over {MAX_BODY_BYTES} bytes", kind="PayloadTooLarge")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise HTTPError(413, f"request body over {MAX_BODY_BYTES} bytes", kind="PayloadTooLarge")
    try:
        body = json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise HTTPError(400, f"the request body is not valid JSON: {exc}", kind="InvalidJSON") from None
    if not isinstance(body, dict):
        raise HTTPError(400, "the request body must be a JSON object", kind="InvalidJSON")
    return body


def _check_number(options: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> None:
    value = options.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, kind)):
        raise HTTPError(400, f"'{key}' must be a number" if kind is not int else f"'{key}' must be an integer", kind="ValidationError")


def _lock_key(pipeline: Pipeline, source: str) -> str:
    """The resolved source a write touches (symlinks resolved: two names of one folder share a lock)."""
    resolved = resolve_source(source, pipeline.config.base_dir)
    return resolved if is_url(resolved) else os.path.realpath(resolved)

"""The OpenAPI 3.1 description of ``ragloom serve`` (served at ``GET /openapi.json``)."""

from __future__ import annotations

from typing import Any

ERROR = {
    "type": "object",
    "required": ["error", "type", "source"],
    "properties": {
        "error": {"type": "string", "description": "what went wrong"},
        "type": {"type": "string", "description": "error class, e.g. FilterError, LoaderError, Unauthorized"},
        "source": {"type": ["string", "null"], "description": "the source the error is about, if any"},
    },
}
RESULT = {
    "type": "object",
    "properties": {
        "rank": {"type": "integer"},
        "score": {"type": "number"},
        "source": {"type": "string"},
        "span": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2, "description": "[start, end) in the document text"},
        "chunk_id": {"type": "string"},
        "document_id": {"type": "string"},
        "text": {"type": "string"},
        "metadata": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
QUERY = {
    "type": "object",
    "required": ["query"],
    "additionalProperties": False,
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "top_k": {"type": "integer", "minimum": 1, "description": "default: the pipeline's retriever top_k"},
        "threshold": {"type": "number", "description": "minimum score (default: the pipeline's)"},
        "filter": {"type": "object", "description": 'metadata filter, e.g. {"category": "support"} (see docs/filters)'},
        "top_n": {"type": "integer", "minimum": 1, "description": "results kept after reranking"},
    },
}
INGEST = {
    "type": "object",
    "required": ["source"],
    "additionalProperties": False,
    "properties": {"source": {"type": "string", "description": "file or folder under an allowed root, or a URL if allowed"}},
}
INGEST_RESULT = {
    "type": "object",
    "properties": {
        key: {"type": "integer"} for key in ("documents", "chunks", "embedded", "unchanged", "removed", "sources", "unchanged_sources")
    }
    | {
        "removed_sources": {"type": "array", "items": {"type": "string"}},
        "skipped": {"type": "array", "items": {"type": "string"}},
        "failed": {"type": "array", "items": {"type": "object", "properties": {"source": {"type": "string"}, "reason": {"type": "string"}}}},
    },
}


def _answer(schema: dict[str, Any], description: str = "OK") -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {400: "bad request", 401: "missing or wrong bearer token", 403: "ingest disabled or source outside the allowed roots",
            413: "body too large", 422: "the source could not be loaded", 500: "server error", 502: "an upstream API failed"}
    return {str(s): _answer({"$ref": "#/components/schemas/Error"}, text[s]) for s in statuses}


def _op(summary: str, answer: dict[str, Any], *errors: int, body: dict[str, Any] | None = None, secured: bool = True) -> dict[str, Any]:
    op: dict[str, Any] = {"summary": summary, "responses": {"200": _answer(answer)} | _errors(*errors, 500)}
    if body is not None:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    if not secured:
        op["security"] = []
    return op


def openapi_schema(*, auth: bool = False) -> dict[str, Any]:
    """The schema; with ``auth`` every operation but ``/health`` requires the bearer token."""
    guarded = (401,) if auth else ()
    schema: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {"title": "ragloom serve", "version": "1", "description": "Retrieval over one ragloom pipeline and its store."},
        "paths": {
            "/query": {"post": _op("Ranked chunks for a query", {"type": "object", "properties": {"query": {"type": "string"}, "results": {"type": "array", "items": {"$ref": "#/components/schemas/Result"}}}}, 400, *guarded, 502, body={"$ref": "#/components/schemas/Query"})},
            "/ingest": {"post": _op("Ingest a file, folder or URL (one write per source at a time)", {"$ref": "#/components/schemas/IngestResult"}, 400, *guarded, 403, 413, 422, 502, body={"$ref": "#/components/schemas/Ingest"})},
            "/sources": {"get": _op("Stored sources", {"type": "object", "properties": {"sources": {"type": "array", "items": {"type": "string"}}}}, *guarded)},
            "/sources/{source}": {
                "delete": _op("Remove a source and its chunks", {"type": "object", "properties": {"source": {"type": "string"}, "removed": {"type": "integer"}}}, *guarded)
                | {"parameters": [{"name": "source", "in": "path", "required": True, "schema": {"type": "string"}, "description": "the stored source (path or URL), URL-encoded"}]}
            },
            "/stats": {"get": _op("Counts for this pipeline and its store", {"type": "object"}, *guarded)},
            "/health": {"get": _op("Liveness (no token needed)", {"type": "object", "properties": {"status": {"const": "ok"}, "namespace": {"type": "string"}, "writing": {"type": "array", "items": {"type": "string"}}}}, secured=False)},
            "/openapi.json": {"get": _op("This document", {"type": "object"}, *guarded)},
        },
        "components": {"schemas": {"Error": ERROR, "Result": RESULT, "Query": QUERY, "Ingest": INGEST, "IngestResult": INGEST_RESULT}},
    }
    if auth:
        schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        schema["security"] = [{"bearer": []}]
    return schema

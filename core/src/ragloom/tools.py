"""Agent tools: ``rag_search`` and ``rag_ingest`` over a pipeline.

Each tool has a ``name``, a ``description`` and a JSON-schema ``parameters``
object (the OpenAI / Anthropic function-calling shape, see :meth:`Tool.spec`)
and is called with the model's arguments (a dict or a JSON string). Arguments
from a model are untrusted: they are type-checked and bounded, and a bad call
returns ``{"error": "..."}`` for the model to read instead of raising.
``rag_ingest`` only reads paths under the roots it was given, and URLs only
when ``allow_urls`` is set (the web loader's SSRF protection still applies).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ragloom.confine import PathConfinement, confined
from ragloom.errors import ConfigError, RagloomError
from ragloom.filters import parse_filter
from ragloom.loaders.base import is_url
from ragloom.pipeline import Pipeline, iter_results_as_dicts

MAX_TOP_K = 50
MAX_CANDIDATES = 500


@attrs.frozen
class Tool:
    """A callable tool with its function-calling schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[dict[str, Any]], dict[str, Any]]

    def spec(self) -> dict[str, Any]:
        """``{"name", "description", "parameters"}`` for a function-calling API."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def __call__(self, arguments: dict[str, Any] | str) -> dict[str, Any]:
        try:
            if isinstance(arguments, str):
                arguments = json.loads(arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("arguments must be a JSON object")
            unknown = set(arguments) - set(self.parameters["properties"])
            if unknown:
                raise ValueError(f"unknown argument(s): {', '.join(sorted(unknown))}")
            return self.handler(arguments)
        except (RagloomError, ValueError, TypeError, OSError, RecursionError) as exc:
            # RecursionError/OSError are fixed at their source; this is the last line so a model never sees a crash.
            return {"error": f"{type(exc).__name__}: {exc}"}


SEARCH_DESCRIPTION = "Search the knowledge base; returns the most relevant passages with their source and character span for citation."
INGEST_DESCRIPTION = "Add a document, folder or web page to the knowledge base (unchanged content is not re-processed)."


def rag_search_tool(
    pipeline: Pipeline,
    *,
    name: str = "rag_search",
    description: str = SEARCH_DESCRIPTION,
    top_k: int | None = None,
    threshold: float | None = None,
    tags: Iterable[str] | None = None,
    filter: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    max_text_chars: int = 2000,
    max_total_chars: int = 8000,
) -> Tool:
    """A tool that queries the pipeline and returns ranked chunks with citations.

    The tool's own ``name`` and ``description``, and retrieval overrides distinct
    from the pipeline's defaults: ``top_k`` and ``threshold`` (what a call gets when
    the model gives none; the pipeline's configured values when None), ``tags``
    (only chunks with one of them) and ``filter`` (always applied, ``$and`` the
    model's own filter), ``options`` (per-query retriever options, e.g.
    ``{"lambda_mult": 0.3}``, see :meth:`Pipeline.query`). A model may pass
    ``candidates`` and ``options`` per call as well. Each passage is cut to
    ``max_text_chars`` and all of them together to ``max_total_chars`` (a cut passage
    has ``"truncated": true``). Any retrieval error (a store or retriever failure,
    a bad option) comes back as ``{"error": ...}``: the agent loop never aborts.
    """
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K):
        raise ConfigError(f"rag_search_tool: 'top_k' must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
        raise ConfigError(f"rag_search_tool: 'threshold' must be a number, got {threshold!r}")
    fixed: list[Any] = []
    if filter is not None:
        parse_filter(filter)  # a bad filter fails here, when the tool is made
        fixed.append(filter)
    if tags is not None:
        wanted = [tags] if isinstance(tags, str) else list(tags)
        if not wanted or not all(isinstance(t, str) for t in wanted):
            raise ConfigError(f"rag_search_tool: 'tags' must be a non-empty list of strings, got {tags!r}")
        fixed.append({"tags": {"$in": wanted}})
    default_options = dict(options or {})

    def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("'query' must be a non-empty string")
        k = arguments.get("top_k")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_TOP_K):
            raise ValueError(f"'top_k' must be an integer from 1 to {MAX_TOP_K}")
        cutoff = arguments.get("threshold")
        if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, (int, float))):
            raise ValueError("'threshold' must be a number")
        candidates = arguments.get("candidates")
        if candidates is not None and (isinstance(candidates, bool) or not isinstance(candidates, int) or not 1 <= candidates <= MAX_CANDIDATES):
            raise ValueError(f"'candidates' must be an integer from 1 to {MAX_CANDIDATES}")
        per_call = _object_argument(arguments.get("options"), "options")
        where = [*fixed, *([f] if (f := _filter_argument(arguments.get("filter"))) is not None else [])]
        try:
            results = pipeline.query(
                query[:4000],
                top_k=k if k is not None else top_k,
                threshold=cutoff if cutoff is not None else threshold,
                filter=where[0] if len(where) == 1 else ({"$and": where} if where else None),
                candidates=candidates,
                options={**default_options, **(per_call or {})},
            )
        except Exception as exc:  # noqa: BLE001 - a retrieval failure is the model's to read, never the loop's end
            return {"error": f"retrieval failed: {type(exc).__name__}: {exc}"}
        rows = []
        budget = max_total_chars
        for row in iter_results_as_dicts(results[:MAX_TOP_K]):
            if budget <= 0:
                break
            text = row["text"][: min(max_text_chars, budget)]
            budget -= len(text)
            rows.append(
                {
                    "rank": row["rank"],
                    "score": round(row["score"], 6),
                    "citation": f"{row['source']}[{row['span'][0]}:{row['span'][1]}]",
                    "source": row["source"],
                    "text": text,
                    "title": row["metadata"].get("title"),
                }
                | ({"truncated": True} if len(text) < len(row["text"]) else {})
            )
        return {"results": rows}

    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to search for"},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "description": "number of passages (default: the pipeline's)"},
                "threshold": {"type": "number", "description": "minimum score (default: the pipeline's)"},
                "filter": {"type": "object", "description": 'metadata filter, e.g. {"category": "support"}'},
                "candidates": {
                    "type": "integer", "minimum": 1, "maximum": MAX_CANDIDATES,
                    "description": "passages retrieved before reranking (default: 4 x top_k)",
                },
                "options": {"type": "object", "description": 'retriever options for this search, e.g. {"lambda_mult": 0.3}'},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=handler,
    )


def _filter_argument(value: Any) -> Any:
    """A filter given as an object, or as a JSON string (the strict-schema form), or nothing."""
    return _object_argument(value, "filter")


def _object_argument(value: Any, name: str) -> Any:
    """An object argument given as an object, or as a JSON string (the strict-schema form), or nothing."""
    if isinstance(value, str):
        if not value.strip():
            return None
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"'{name}' is not valid JSON: {exc.msg}") from None
    if value is not None and not isinstance(value, dict):
        raise ValueError(f"'{name}' must be a JSON object")
    return value or None


def rag_ingest_tool(
    pipeline: Pipeline,
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] = (),
    allow_urls: bool = False,
    name: str = "rag_ingest",
    description: str = INGEST_DESCRIPTION,
) -> Tool:
    """A tool that ingests a file, a folder (under ``allowed_roots``) or a URL (if ``allow_urls``).

    Paths are checked and read through one :class:`ragloom.confine.PathConfinement`:
    no link is followed out of (or within) the allowed folders, and a file swapped
    for a link after the check is refused.
    """
    confinement = PathConfinement(allowed_roots)

    def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        source = arguments.get("source")
        if not isinstance(source, str) or not source.strip():
            raise ValueError("'source' must be a non-empty string")
        if is_url(source):
            if not allow_urls:
                raise ValueError("URLs are not allowed for this tool")
        else:
            if source.startswith("file://"):
                source = source[len("file://") :]
            source = confinement.locate(source, pipeline.config.base_dir)
        with confined(confinement):
            result = pipeline.ingest(source)
        return {k: v for k, v in result.to_dict().items() if k != "failed"} | {
            "failed": [{"source": f.source, "reason": f.reason} for f in result.failed]
        }

    return Tool(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {"source": {"type": "string", "description": "file or folder path, or URL"}},
            "required": ["source"],
            "additionalProperties": False,
        },
        handler=handler,
    )

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
from ragloom.errors import RagloomError
from ragloom.loaders.base import is_url
from ragloom.pipeline import Pipeline, iter_results_as_dicts

MAX_TOP_K = 50


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


def rag_search_tool(pipeline: Pipeline, *, max_text_chars: int = 2000) -> Tool:
    """A tool that queries the pipeline and returns ranked chunks with citations."""

    def handler(arguments: dict[str, Any]) -> dict[str, Any]:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            raise ValueError("'query' must be a non-empty string")
        top_k = arguments.get("top_k", 5)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
            raise ValueError(f"'top_k' must be an integer from 1 to {MAX_TOP_K}")
        results = pipeline.query(query[:4000], top_k=top_k, filter=arguments.get("filter"))
        rows = []
        for row in iter_results_as_dicts(results):
            rows.append(
                {
                    "rank": row["rank"],
                    "score": round(row["score"], 6),
                    "citation": f"{row['source']}[{row['span'][0]}:{row['span'][1]}]",
                    "source": row["source"],
                    "text": row["text"][:max_text_chars],
                    "title": row["metadata"].get("title"),
                }
            )
        return {"results": rows}

    return Tool(
        name="rag_search",
        description="Search the knowledge base; returns the most relevant passages with their source and character span for citation.",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to search for"},
                "top_k": {"type": "integer", "minimum": 1, "maximum": MAX_TOP_K, "default": 5},
                "filter": {"type": "object", "description": 'metadata filter, e.g. {"category": "support"}'},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        handler=handler,
    )


def rag_ingest_tool(pipeline: Pipeline, *, allowed_roots: Iterable[str | os.PathLike[str]] = (), allow_urls: bool = False) -> Tool:
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
        name="rag_ingest",
        description="Add a document, folder or web page to the knowledge base (unchanged content is not re-processed).",
        parameters={
            "type": "object",
            "properties": {"source": {"type": "string", "description": "file or folder path, or URL"}},
            "required": ["source"],
            "additionalProperties": False,
        },
        handler=handler,
    )

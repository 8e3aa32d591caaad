"""``ragloom mcp``: the official SDK's client session against the server in a subprocess."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from canary import leaked, make_canary, stored_texts
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from serve_helpers import write_config

from ragloom import Pipeline


async def _session(config: Path, extra: list[str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "ragloom.cli", "mcp", "-c", str(config), *extra])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def _run(config: Path, extra: list[str], calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    return anyio.run(_session, config, extra, calls)


def _text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def test_mcp_search_and_ingest(corpus: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    calls = [
        ("rag_ingest", {"source": str(corpus)}),
        ("rag_search", {"query": "factory reset", "top_k": 2}),
        ("rag_search", {"query": "factory reset", "filter": {"category": {"$where": 1}}}),
        ("rag_search", {"query": ""}),
        ("rag_ingest", {"source": "/etc/passwd"}),
        ("rag_nothing", {}),
    ]
    tools, (ingested, found, bad_filter, empty, outside, unknown) = _run(config, ["--allow-root", str(corpus)], calls)
    assert [t.name for t in tools] == ["rag_search", "rag_ingest"]
    search = tools[0]
    assert search.input_schema["required"] == ["query"] and "source" in search.description
    assert not ingested.is_error and json.loads(_text(ingested))["documents"] == 12
    assert not found.is_error
    rows = json.loads(_text(found))["results"]
    assert len(rows) == 2 and rows[0]["citation"].startswith(rows[0]["source"])
    assert found.structured_content["results"] == rows
    assert bad_filter.is_error and "$where" in _text(bad_filter)
    assert empty.is_error and "query" in _text(empty)
    assert outside.is_error and "outside" in _text(outside)
    assert unknown.is_error and "unknown tool" in _text(unknown)
    with Pipeline.from_toml(config) as pipeline:  # the server closed the DuckDB file on exit
        assert len(pipeline.sources()) == 12


def test_mcp_without_allowed_roots_offers_search_only(corpus: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with Pipeline.from_toml(config) as pipeline:
        pipeline.ingest(corpus)
    tools, (found, refused) = _run(config, [], [("rag_search", {"query": "warranty"}), ("rag_ingest", {"source": str(corpus)})])
    assert [t.name for t in tools] == ["rag_search"]
    assert not found.is_error and json.loads(_text(found))["results"]
    assert refused.is_error


def test_mcp_ingest_never_reads_the_canary(tmp_path: Path) -> None:
    canary = make_canary(tmp_path)
    config = write_config(tmp_path)
    sources = [canary.root, *canary.links, canary.links[1] / "canary.md"]
    calls = [("rag_ingest", {"source": str(s)}) for s in sources] + [("rag_search", {"query": "CANARY-7f3a secret payroll figures", "top_k": 10})]
    _, results = _run(config, ["--allow-root", str(canary.root)], calls)
    assert results[1].is_error and results[2].is_error  # the links themselves are refused
    assert not any(leaked(_text(r)) for r in results)
    with Pipeline.from_toml(config) as pipeline:
        assert not leaked(stored_texts(pipeline))

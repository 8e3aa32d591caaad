"""``ragloom mcp``: ``rag_search`` and ``rag_ingest`` for MCP clients over stdio (the ``ragloom[mcp]`` extra).

Built on the official ``mcp`` SDK's low-level server. The tools are the agent
tools of :mod:`ragloom.tools` (same schemas, same argument checks, same path
confinement); a bad call or a failing tool answers an MCP tool error
(``isError: true`` with the message) instead of ending the session. ``rag_ingest``
is listed only when allowed roots (or URLs) are configured. Tool calls run in
worker threads (:mod:`ragloom.aio`), so the session keeps reading messages.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server

from ragloom import aio
from ragloom.errors import RagloomError
from ragloom.pipeline import Pipeline
from ragloom.tools import Tool, rag_ingest_tool, rag_search_tool

SERVER_NAME = "ragloom"


def build_server(
    pipeline: Pipeline,
    *,
    allowed_roots: Iterable[str | os.PathLike[str]] = (),
    allow_urls: bool = False,
    search: Tool | None = None,
) -> Server[Any]:
    """An MCP server exposing ``rag_search`` (and ``rag_ingest`` when allowed roots or URLs are given)."""
    roots = [os.fspath(r) for r in allowed_roots]
    tools = [search or rag_search_tool(pipeline)]
    if roots or allow_urls:
        tools.append(rag_ingest_tool(pipeline, allowed_roots=roots, allow_urls=allow_urls))
    by_name = {tool.name: tool for tool in tools}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=t.name, description=t.description, input_schema=t.parameters) for t in tools]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _error(f"unknown tool {params.name!r}; this server has {', '.join(by_name)}")
        answer = await aio.run_blocking(_call, tool, dict(params.arguments or {}))
        if "error" in answer:
            return _error(answer["error"])
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(answer, ensure_ascii=False))], structured_content=answer
        )

    return Server(SERVER_NAME, on_list_tools=list_tools, on_call_tool=call_tool)


def _call(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    try:
        return tool(arguments)
    except RagloomError as exc:  # Tool turns the expected failures into {"error"}; this catches the rest
        return {"error": f"{type(exc).__name__}: {exc}"}


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def run_stdio(pipeline: Pipeline, *, allowed_roots: Iterable[str | os.PathLike[str]] = (), allow_urls: bool = False) -> None:
    """Serve over stdin/stdout until the client closes the session; then close the pipeline."""
    from mcp.server.stdio import stdio_server

    server = build_server(pipeline, allowed_roots=allowed_roots, allow_urls=allow_urls)

    async def main() -> None:
        try:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            await aio.aclose(pipeline)

    anyio.run(main)

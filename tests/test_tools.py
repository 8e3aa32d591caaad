"""Agent tools: schema, hostile arguments, path confinement."""

from __future__ import annotations

import json
from pathlib import Path

from ragloom import Pipeline
from ragloom.tools import rag_ingest_tool, rag_search_tool


def test_search_and_ingest_tools(corpus: Path, tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).build()
    ingest = rag_ingest_tool(pipeline, allowed_roots=[corpus])
    search = rag_search_tool(pipeline)
    assert search.spec()["parameters"]["required"] == ["query"]

    done = ingest({"source": str(corpus)})
    assert done["documents"] == 12 and done["failed"] == []
    found = search(json.dumps({"query": "factory reset", "top_k": 2}))
    assert len(found["results"]) == 2
    first = found["results"][0]
    source, span = first["citation"].rsplit("[", 1)
    start, end = (int(x) for x in span.rstrip("]").split(":"))
    assert end - start == len(first["text"]) and source == first["source"]


def test_hostile_arguments_become_error_messages(corpus: Path, tmp_path: Path) -> None:
    pipeline = Pipeline.builder().build()
    search = rag_search_tool(pipeline)
    ingest = rag_ingest_tool(pipeline, allowed_roots=[corpus])
    assert "top_k" in search({"query": "x", "top_k": 10_000})["error"]
    assert "top_k" in search({"query": "x", "top_k": True})["error"]
    assert "query" in search({"query": ""})["error"]
    assert "unknown argument" in search({"query": "x", "drop": "table"})["error"]
    assert "unknown operator" in search({"query": "x", "filter": {"a": {"$where": "1"}}})["error"]
    assert "JSON" in search("{not json")["error"] or "Expecting" in search("{not json")["error"]
    assert "outside" in ingest({"source": "/etc/passwd"})["error"]
    assert "outside" in ingest({"source": str(corpus / ".." / ".." )})["error"]
    assert "not allowed" in ingest({"source": "http://169.254.169.254/latest/meta-data"})["error"]
    assert pipeline.stats()["chunks"] == 0

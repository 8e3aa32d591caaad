"""Agent tools in the OpenAI and Anthropic shapes; rag_search defaults and bounds; the rag_ingest canary."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from canary import leaked, make_canary, stored_texts

from ragloom import Pipeline
from ragloom.tools import rag_ingest_tool, rag_search_tool
from ragloom.tools_export import call_tool, strict_schema, to_anthropic, to_openai


def _pipeline(tmp_path: Path, **retriever: object) -> Pipeline:
    return Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=256).retriever("similarity", **retriever).build()


def _strict_ok(schema: dict) -> None:
    """What OpenAI's strict mode demands of every object in the schema."""
    if schema.get("type") == "object" or "object" in schema.get("type", ()):
        assert schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
        for sub in schema["properties"].values():
            _strict_ok(sub)
    for key in ("default", "minimum", "maximum"):
        assert key not in schema


def test_openai_shape_is_strict(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    spec = to_openai(rag_search_tool(pipeline))
    assert spec["type"] == "function" and spec["function"]["strict"] is True
    function = spec["function"]
    assert function["name"] == "rag_search" and "Search" in function["description"]
    params = function["parameters"]
    _strict_ok(params)
    jsonschema.Draft202012Validator.check_schema(params)
    assert params["properties"]["query"]["type"] == "string"
    assert params["properties"]["top_k"]["type"] == ["integer", "null"]
    assert "maximum 50" in params["properties"]["top_k"]["description"]
    assert params["properties"]["filter"]["type"] == ["string", "null"]
    # a strict model fills every field: nulls and a JSON-string filter are what it sends
    validator = jsonschema.Draft202012Validator(params)
    call = {"query": "reset", "top_k": None, "threshold": None, "filter": '{"category": "support"}', "candidates": None, "options": None}
    validator.validate(call)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"query": "reset"})  # strict: every property present
    ingest = to_openai(rag_ingest_tool(pipeline, allowed_roots=[tmp_path]))["function"]["parameters"]
    _strict_ok(ingest)
    assert to_openai(rag_search_tool(pipeline), strict=False)["function"]["parameters"] == rag_search_tool(pipeline).parameters


def test_anthropic_shape_and_configurable_names(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    search = rag_search_tool(pipeline, name="handbook_search", description="Search the employee handbook.")
    ingest = rag_ingest_tool(pipeline, allowed_roots=[tmp_path], name="handbook_add", description="Add a handbook page.")
    spec = to_anthropic(search)
    assert set(spec) == {"name", "description", "input_schema"}
    assert spec["name"] == "handbook_search" and spec["description"] == "Search the employee handbook."
    assert spec["input_schema"]["required"] == ["query"] and spec["input_schema"]["properties"]["filter"]["type"] == "object"
    jsonschema.Draft202012Validator.check_schema(spec["input_schema"])
    assert to_anthropic(ingest)["name"] == "handbook_add"
    assert to_openai(ingest)["function"]["description"] == "Add a handbook page."
    assert "no tool named" in json.loads(call_tool([search], "rag_search", {"query": "x"}))["error"]


def test_search_defaults_to_the_pipeline_and_takes_threshold_and_filter(corpus: Path, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path, top_k=3)
    pipeline.ingest(corpus, tags=["kb"])
    search = rag_search_tool(pipeline)
    assert len(search({"query": "factory reset"})["results"]) == 3  # the retriever's top_k, not a tool default
    strict_call = {"query": "factory reset", "top_k": None, "threshold": None, "filter": None}
    assert search(strict_call) == search({"query": "factory reset"})
    scores = [r["score"] for r in search({"query": "factory reset", "top_k": 10})["results"]]
    cut = (scores[4] + scores[5]) / 2  # between two (rounded) scores
    above = search({"query": "factory reset", "top_k": 10, "threshold": cut})["results"]
    assert [r["score"] for r in above] == [s for s in scores if s >= cut] and len(above) < 10
    source = pipeline.sources()[0]
    for given in ({"source": source}, json.dumps({"source": source})):
        only = search({"query": "factory reset", "filter": given})["results"]
        assert only and {r["source"] for r in only} == {source}
    assert "filter" in search({"query": "x", "filter": "{broken"})["error"]
    assert "threshold" in search({"query": "x", "threshold": "high"})["error"]


def test_search_bounds_returned_characters(corpus: Path, tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    pipeline.ingest(corpus)
    search = rag_search_tool(pipeline, max_text_chars=120, max_total_chars=300)
    rows = search({"query": "warranty battery reset", "top_k": 10})["results"]
    assert sum(len(r["text"]) for r in rows) <= 300
    assert all(len(r["text"]) <= 120 for r in rows)
    assert any(r.get("truncated") for r in rows)
    unbounded = rag_search_tool(pipeline, max_text_chars=10**6, max_total_chars=10**6)({"query": "warranty battery reset", "top_k": 10})
    assert len(unbounded["results"]) == 10 and len(rows) < 10


def test_strict_schema_leaves_the_tool_schema_alone(tmp_path: Path) -> None:
    tool = rag_search_tool(_pipeline(tmp_path))
    before = json.dumps(tool.parameters, sort_keys=True)
    strict_schema(tool.parameters)
    assert json.dumps(tool.parameters, sort_keys=True) == before


def test_rag_ingest_tool_never_reads_the_canary(tmp_path: Path) -> None:
    canary = make_canary(tmp_path)
    pipeline = _pipeline(tmp_path)
    ingest = rag_ingest_tool(pipeline, allowed_roots=[canary.root])
    responses = [ingest({"source": str(canary.root)})]
    responses += [ingest({"source": str(link)}) for link in canary.links]
    responses += [ingest({"source": str(canary.links[1] / "canary.md")})]
    assert "error" in responses[1] and "error" in responses[2]  # the links themselves are refused
    assert not any(leaked(json.dumps(r)) for r in responses)
    assert not leaked(stored_texts(pipeline))
    found = rag_search_tool(pipeline)({"query": "CANARY-7f3a secret payroll figures", "top_k": 10})
    assert not leaked(json.dumps(found))

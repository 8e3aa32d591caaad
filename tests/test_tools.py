"""Agent tools: schema, hostile arguments, path confinement."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragloom import Pipeline
from ragloom.errors import FilterError
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


# ---------------------------------------------------------------------------- every promise of the two tools


def _long_pipeline(tmp_path: Path, files: int = 5, chars: int = 3000) -> Pipeline:
    """``files`` documents of one ``chars``-character chunk each (hash embedder, no network)."""
    root = tmp_path / "long"
    root.mkdir()
    for i in range(files):
        words = " ".join(f"lamp{i}w{n}" for n in range(chars))[:chars]
        (root / f"doc{i}.md").write_text(words[:-1] + "x", encoding="utf-8")
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).chunker("recursive", size=2 * chars, overlap=0).build()
    pipeline.ingest(root)
    return pipeline


def test_the_spec_and_default_names_of_both_tools(tmp_path: Path) -> None:
    from ragloom.tools import INGEST_DESCRIPTION, MAX_CANDIDATES, MAX_TOP_K, SEARCH_DESCRIPTION

    pipeline = Pipeline.builder().base_dir(tmp_path).build()
    search, ingest = rag_search_tool(pipeline), rag_ingest_tool(pipeline)
    assert search.spec() == {"name": "rag_search", "description": SEARCH_DESCRIPTION, "parameters": search.parameters}
    assert ingest.spec() == {"name": "rag_ingest", "description": INGEST_DESCRIPTION, "parameters": ingest.parameters}
    assert SEARCH_DESCRIPTION.startswith("Search the knowledge base") and INGEST_DESCRIPTION.startswith("Add a document")
    properties = search.parameters["properties"]
    assert search.parameters["type"] == "object" and search.parameters["additionalProperties"] is False
    assert set(properties) == {"query", "top_k", "threshold", "filter", "candidates", "options"}
    assert (properties["top_k"]["minimum"], properties["top_k"]["maximum"]) == (1, MAX_TOP_K) == (1, 50)
    assert (properties["candidates"]["minimum"], properties["candidates"]["maximum"]) == (1, MAX_CANDIDATES) == (1, 500)
    assert [properties[k]["type"] for k in ("query", "threshold", "filter", "options")] == ["string", "number", "object", "object"]
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what to search for"},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "number of passages (default: the pipeline's)"},
            "threshold": {"type": "number", "description": "minimum score (default: the pipeline's)"},
            "filter": {"type": "object", "description": 'metadata filter, e.g. {"category": "support"}'},
            "candidates": {
                "type": "integer", "minimum": 1, "maximum": 500,
                "description": "passages retrieved before reranking (default: 4 x top_k)",
            },
            "options": {"type": "object", "description": 'retriever options for this search, e.g. {"lambda_mult": 0.3}'},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert ingest.parameters == {
        "type": "object",
        "properties": {"source": {"type": "string", "description": "file or folder path, or URL"}},
        "required": ["source"],
        "additionalProperties": False,
    }


def test_search_tool_settings_are_checked_when_the_tool_is_made(tmp_path: Path) -> None:
    from ragloom.errors import ConfigError

    pipeline = Pipeline.builder().base_dir(tmp_path).build()
    for top_k in (1, 50):
        assert rag_search_tool(pipeline, top_k=top_k).name == "rag_search"
    for bad in (0, 51, True, 2.0, "3"):
        with pytest.raises(ConfigError, match=r"^rag_search_tool: 'top_k' must be an integer from 1 to 50, got "):
            rag_search_tool(pipeline, top_k=bad)  # type: ignore[arg-type]
    for threshold in (0, 0.5, -1):
        rag_search_tool(pipeline, threshold=threshold)
    for bad in (True, "0.5", [0.5]):
        with pytest.raises(ConfigError, match=r"^rag_search_tool: 'threshold' must be a number, got "):
            rag_search_tool(pipeline, threshold=bad)  # type: ignore[arg-type]
    for bad in ([], [1], ["ok", None]):
        with pytest.raises(ConfigError, match=r"^rag_search_tool: 'tags' must be a non-empty list of strings, got "):
            rag_search_tool(pipeline, tags=bad)  # type: ignore[arg-type]
    with pytest.raises(FilterError):
        rag_search_tool(pipeline, filter={"year": {"$regex": "x"}})


def test_search_call_arguments_are_checked_at_their_bounds(corpus: Path, tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).build()
    pipeline.ingest(corpus)
    search = rag_search_tool(pipeline)
    assert len(search({"query": "reset", "top_k": 1})["results"]) == 1
    assert len(search({"query": "reset", "top_k": 50})["results"]) > 1
    for bad in (0, 51, True, 1.0, "2"):
        assert search({"query": "reset", "top_k": bad}) == {"error": "ValueError: 'top_k' must be an integer from 1 to 50"}
    for good in (1, 500):  # accepted by the tool; this pipeline, without a reranker, then refuses a pool size
        assert search({"query": "reset", "candidates": good})["error"].startswith("retrieval failed: ConfigError: query option 'candidates'")
    for bad in (0, 501, False, 2.5, "9"):
        assert search({"query": "reset", "candidates": bad}) == {"error": "ValueError: 'candidates' must be an integer from 1 to 500"}
    for bad in (True, "0.1", [1]):
        assert search({"query": "reset", "threshold": bad}) == {"error": "ValueError: 'threshold' must be a number"}
    for bad in (None, "", "   ", 3):
        assert search({"query": bad}) == {"error": "ValueError: 'query' must be a non-empty string"}
    assert search({}) == {"error": "ValueError: 'query' must be a non-empty string"}
    # the query is cut to 4000 characters: here only blanks are left, which the pipeline refuses
    assert search({"query": " " * 4000 + "reset"}) == {"error": "retrieval failed: ConfigError: a query must be a non-empty string"}
    assert "results" in search({"query": " " * 3999 + "reset"})
    assert search("") == {"error": "ValueError: 'query' must be a non-empty string"}  # an empty string is no arguments
    assert search("[1, 2]") == {"error": "ValueError: arguments must be a JSON object"}
    assert search({"query": "x", "b": 1, "a": 2}) == {"error": "ValueError: unknown argument(s): a, b"}
    for name in ("filter", "options"):
        assert search({"query": "x", name: [1]}) == {"error": f"ValueError: '{name}' must be a JSON object"}
        assert search({"query": "x", name: "[1]"}) == {"error": f"ValueError: '{name}' must be a JSON object"}
        assert search({"query": "x", name: "{oops"})["error"].startswith(f"ValueError: '{name}' is not valid JSON: ")
        assert search({"query": "reset", name: " "}) == search({"query": "reset"}) == search({"query": "reset", name: {}})
    # a retrieval failure (here an option the retriever does not know) is an answer, never an exception
    failed = search({"query": "reset", "options": '{"no_such_option": 1}'})
    assert failed["error"].startswith("retrieval failed: ConfigError: ") and "no_such_option" in failed["error"]


def test_search_rows_carry_rank_score_citation_and_title(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# Lamp\n\nThe lamp glows warm.", encoding="utf-8")
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).build()
    pipeline.ingest(tmp_path / "a.md")
    [expected] = pipeline.query("lamp glows", top_k=1)
    [row] = rag_search_tool(pipeline)({"query": "lamp glows", "top_k": 1})["results"]
    assert row == {
        "rank": 1,
        "score": round(expected.score, 6),
        "citation": f"{expected.source}[{expected.span[0]}:{expected.span[1]}]",
        "source": expected.source,
        "text": expected.text,
        "title": expected.metadata.get("title"),
    }
    assert row["title"] == "Lamp"


def test_search_cuts_passages_at_2000_and_all_of_them_at_8000_characters_by_default(tmp_path: Path) -> None:
    pipeline = _long_pipeline(tmp_path)
    rows = rag_search_tool(pipeline)({"query": "lamp0w1", "top_k": 5})["results"]
    assert [len(r["text"]) for r in rows] == [2000, 2000, 2000, 2000]  # the fifth would start past 8000
    assert all(r["truncated"] is True for r in rows)
    cut = rag_search_tool(pipeline, max_text_chars=2500, max_total_chars=6000)({"query": "lamp0w1", "top_k": 5})["results"]
    assert [len(r["text"]) for r in cut] == [2500, 2500, 1000]  # the last one cut to what is left of the budget
    one_left = rag_search_tool(pipeline, max_text_chars=2500, max_total_chars=5001)({"query": "lamp0w1", "top_k": 5})["results"]
    assert [len(r["text"]) for r in one_left] == [2500, 2500, 1]  # one character of budget still gives a passage
    whole = rag_search_tool(pipeline, max_text_chars=3000, max_total_chars=3000)({"query": "lamp0w1", "top_k": 5})["results"]
    assert [len(r["text"]) for r in whole] == [3000] and "truncated" not in whole[0]


def test_search_tool_fixed_filter_tags_and_options_apply_to_every_call(tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).build()
    for name, tag in (("a", "red"), ("b", "blue"), ("c", "red")):
        (tmp_path / f"{name}.md").write_text(f"The lamp {name} glows.", encoding="utf-8")
        pipeline.ingest(tmp_path / f"{name}.md", tags=[tag])
    a_or_b = {"source": {"$in": [str(tmp_path / "a.md"), str(tmp_path / "b.md")]}}
    only_c = {"source": str(tmp_path / "c.md")}

    def names(tool: object, **arguments: object) -> set[str]:
        return {Path(r["source"]).stem for r in tool({"query": "lamp glows", "top_k": 10, **arguments})["results"]}  # type: ignore[operator]

    assert names(rag_search_tool(pipeline)) == {"a", "b", "c"}
    assert names(rag_search_tool(pipeline, tags=["red"])) == {"a", "c"}
    assert names(rag_search_tool(pipeline, tags="blue")) == {"b"}
    assert names(rag_search_tool(pipeline, filter=a_or_b)) == {"a", "b"}
    assert names(rag_search_tool(pipeline, filter=a_or_b, tags=["red"])) == {"a"}
    assert names(rag_search_tool(pipeline, tags=["red"]), filter=only_c) == {"c"}
    assert names(rag_search_tool(pipeline, filter=a_or_b, tags=["red"]), filter=only_c) == set()
    assert names(rag_search_tool(pipeline), filter=json.dumps(only_c)) == {"c"}
    # a default option is used, and a call's own options are added to it
    bad_default = rag_search_tool(pipeline, options={"no_such_option": 1})
    assert "no_such_option" in bad_default({"query": "lamp"})["error"]
    assert "no_such_option" in rag_search_tool(pipeline)({"query": "lamp", "options": {"no_such_option": 1}})["error"]


def test_search_tool_defaults_top_k_and_threshold_to_its_own_settings(corpus: Path, tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).build()
    pipeline.ingest(corpus)
    assert len(rag_search_tool(pipeline, top_k=2)({"query": "reset"})["results"]) == 2
    assert len(rag_search_tool(pipeline, top_k=2)({"query": "reset", "top_k": 3})["results"]) == 3
    assert rag_search_tool(pipeline, threshold=1.01)({"query": "reset"}) == {"results": []}
    assert len(rag_search_tool(pipeline, threshold=1.01)({"query": "reset", "threshold": -1.0, "top_k": 2})["results"]) == 2


def test_ingest_tool_reads_file_urls_under_its_roots_and_refuses_urls_unless_allowed(corpus: Path, tmp_path: Path) -> None:
    pipeline = Pipeline.builder().base_dir(tmp_path).embedder("hash", dim=64).build()
    ingest = rag_ingest_tool(pipeline, allowed_roots=[corpus])
    first = sorted(corpus.rglob("*.md"))[0]
    done = ingest({"source": f"file://{first}"})
    assert done["documents"] == 1 and done["failed"] == [] and pipeline.sources() == [str(first)]
    assert ingest({"source": "https://example.com/"}) == {"error": "ValueError: URLs are not allowed for this tool"}
    for bad in (None, "", "  ", 7):
        assert ingest({"source": bad}) == {"error": "ValueError: 'source' must be a non-empty string"}
    assert "outside" in ingest({"source": f"file://{tmp_path}"})["error"]
    # with allow_urls the URL goes to the web loader, whose address guard refuses a loopback address
    web = rag_ingest_tool(pipeline, allowed_roots=[corpus], allow_urls=True)({"source": "http://127.0.0.1:9/"})
    assert web["error"].startswith("BlockedAddressError: http://127.0.0.1:9/: refused to connect to 127.0.0.1")


def test_ingest_tool_reports_each_failed_file_by_source_and_reason(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    root.mkdir()
    (root / "bad.json").write_text("{oops", encoding="utf-8")
    (root / "a.md").write_text("The lamp glows.", encoding="utf-8")
    (tmp_path / "ragloom.toml").write_text('[embedder]\ntype = "hash"\ndim = 64\n[ingest]\non_error = "skip"\n', encoding="utf-8")
    done = rag_ingest_tool(Pipeline.from_toml(tmp_path / "ragloom.toml"), allowed_roots=[root])({"source": str(root)})
    assert done["documents"] == 1 and done["chunks"] == 1 and done["skipped"] == []
    assert done["failed"] == [{"source": str(root / "bad.json"), "reason": "invalid JSON: Expecting property name enclosed in double quotes"}]

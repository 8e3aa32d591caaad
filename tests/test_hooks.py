"""Each hook, exercised through a TOML pipeline with a test plugin's components."""

from __future__ import annotations

from pathlib import Path

from plugins import complete
from ragloom import Pipeline
from ragloom.plugins import Registry, make_plugin_manager


def test_every_stage_from_a_plugin(tmp_path: Path, corpus: Path) -> None:
    registry = Registry(make_plugin_manager(load_entry_points=False, extra_plugins=[complete]))
    (corpus / "lamp.kv").write_text("text=The lamp hums softly at night when dimmed below five percent.\ncategory=notes\n")
    config = tmp_path / "ragloom.toml"
    config.write_text(
        f"""
[[sources]]
path = "{corpus.as_posix()}"

[loaders.keyvalue]
separator = "="

[store]
type = "counting"

[retriever]
type = "longest"

[reranker]
type = "reverse"
top_n = 2

[llm]
type = "echo"
prefix = "echo: "
""",
        encoding="utf-8",
    )
    pipeline = Pipeline.from_toml(config, registry=registry)
    result = pipeline.ingest()
    assert result.sources == 13 and not result.skipped
    hits = pipeline.query("lamp hums at night", filter={"category": "notes"})
    assert len(hits) == 1 and hits[0].metadata["category"] == "notes"
    assert hits[0].metadata["retrieval_score"] > 0 and hits[0].score == 1.0
    assert pipeline.store.searches == 1
    many = pipeline.query("lamp")
    assert len(many) == 2  # the reranker's top_n
    assert len(many[0].text) <= len(many[1].text)  # reversed longest-first order
    assert pipeline.llm is not None and pipeline.llm.generate("a\nlamp") == "echo: LAMP"  # [llm] from register_llms

"""Per-call chunking options: ingest(..., chunker=...), ingest_documents, aingest and ``ragloom ingest --chunker``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ragloom import ConfigError, Document, Pipeline
from ragloom.chunkers.sentence import SentenceChunker, SentenceConfig
from ragloom.cli import main
from ragloom.stores.memory import MemoryStore


def _pipeline(base: Path) -> tuple[Pipeline, MemoryStore]:
    store = MemoryStore()
    pipeline = Pipeline.builder().base_dir(base).store(store).embedder("hash", dim=64).chunker("recursive", size=300, overlap=20).build()
    return pipeline, store


def _texts(store: MemoryStore, source: str) -> list[str]:
    return [c.text for c in store.chunks("default") if c.source == source]


def test_an_ingest_call_can_chunk_with_another_chunker(corpus: Path) -> None:
    pipeline, store = _pipeline(corpus.parent)
    warranty = str(corpus / "warranty.txt")
    result = pipeline.ingest(warranty, chunker={"type": "sentence", "size": 200})
    document = Document.create((corpus / "warranty.txt").read_text(encoding="utf-8"), warranty)
    expected = [c.text for c in SentenceChunker(SentenceConfig(size=200)).chunk(document)]
    assert _texts(store, warranty) == expected and result.chunks == len(expected)
    assert pipeline.stats()["chunker"] == pipeline.chunker.fingerprint  # the configured chunker is untouched
    # the same override again: nothing to do; the configured chunker afterwards: chunked again (the fingerprint differs)
    again = pipeline.ingest(warranty, chunker={"type": "sentence", "size": 200})
    assert again.unchanged == 1 and again.chunks == 0
    configured = pipeline.ingest(warranty)
    assert configured.unchanged == 0 and configured.chunks > 0
    assert _texts(store, warranty) == [c.text for c in pipeline.chunker.chunk(document)]
    assert _texts(store, warranty) != expected


def test_options_without_a_type_change_the_configured_chunker(corpus: Path) -> None:
    pipeline, store = _pipeline(corpus.parent)
    smaller = pipeline.chunker_for({"size": 100})
    assert smaller.config.size == 100 and smaller.config.overlap == 20  # type: ignore[attr-defined]
    assert smaller.fingerprint != pipeline.chunker.fingerprint
    assert pipeline.chunker_for("sentence").config == SentenceConfig()  # type: ignore[attr-defined]
    assert pipeline.chunker_for(None) is pipeline.chunker
    pipeline.ingest(str(corpus / "faq.md"), chunker={"size": 100})
    assert max(len(t) for t in _texts(store, str(corpus / "faq.md"))) <= 100


def test_bad_chunker_options_are_config_errors_naming_the_key(corpus: Path) -> None:
    pipeline, store = _pipeline(corpus.parent)
    with pytest.raises(ConfigError, match=r"'sise'.*did you mean 'size'"):
        pipeline.ingest(str(corpus), chunker={"type": "sentence", "sise": 200})
    with pytest.raises(ConfigError, match=r"'size'.*@ chunker"):
        pipeline.ingest(str(corpus), chunker={"size": 0})
    with pytest.raises(ConfigError, match="nosuch"):
        pipeline.ingest_documents([], chunker={"type": "nosuch"})
    with pytest.raises(ConfigError, match="chunker"):
        pipeline.ingest(str(corpus), chunker=42)
    assert store.count("default") == 0  # nothing was ingested by a refused call


def test_ingest_documents_and_aingest_take_the_chunker(corpus: Path) -> None:
    pipeline, store = _pipeline(corpus.parent)
    text = "One sentence here. Another sentence there. A third one follows. And the last one ends it."
    result = pipeline.ingest_documents([Document.create(text, "/notes/a.txt")], chunker={"type": "sentence", "size": 40})
    assert result.chunks == len(_texts(store, "/notes/a.txt")) and all(t.endswith(".") for t in _texts(store, "/notes/a.txt"))
    warranty = str(corpus / "warranty.txt")
    asyncio.run(pipeline.aingest(warranty, chunker={"type": "sentence", "size": 200}))
    document = Document.create((corpus / "warranty.txt").read_text(encoding="utf-8"), warranty)
    assert _texts(store, warranty) == [c.text for c in SentenceChunker(SentenceConfig(size=200)).chunk(document)]


def test_cli_ingest_chunker_flags(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "ragloom.toml"
    config.write_text(
        f'[store]\ntype = "duckdb"\npath = "{tmp_path / "store.duckdb"}"\n[embedder]\ntype = "hash"\ndim = 64\n', encoding="utf-8"
    )
    warranty = str(corpus / "warranty.txt")
    assert main(["-c", str(config), "ingest", "--json", "--chunker", "sentence", "--chunk-size", "150", warranty]) == 0
    result = json.loads(capsys.readouterr().out)
    document = Document.create((corpus / "warranty.txt").read_text(encoding="utf-8"), warranty)
    assert result["chunks"] == len(SentenceChunker(SentenceConfig(size=150)).chunk(document))
    assert main(["-c", str(config), "ingest", "--json", "--chunker", "sentence", "--chunk-size", "150", warranty]) == 0
    assert json.loads(capsys.readouterr().out)["unchanged"] == 1
    assert main(["-c", str(config), "ingest", "--json", "--chunk-size", "0", warranty]) != 0
    assert "size" in capsys.readouterr().err

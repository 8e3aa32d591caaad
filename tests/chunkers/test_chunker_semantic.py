"""The semantic chunker: breakpoints, size bounds, batching, async use."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from chunker_checks import check_chunks, check_spans
from helpers import CountingEmbedder

from ragloom.chunkers import SemanticChunker, SemanticConfig
from ragloom.chunkers.semantic import neighbour_similarities
from ragloom.errors import ConfigError
from ragloom.types import Document

LAMPS = "The lamp glows warm. The lamp glows bright. A lamp glows at night. Lamps glow softly."
BAKING = "Bread needs flour and yeast. Knead the bread dough well. Bake the bread dough hot."
TEXT = f"{LAMPS} {BAKING} {LAMPS}"


def test_breaks_where_the_topic_changes() -> None:
    chunker = SemanticChunker(SemanticConfig(breakpoint="threshold", breakpoint_threshold=0.1, min_size=0, max_size=1000), embedder=CountingEmbedder())
    texts = [TEXT[a:b] for a, b in chunker.spans(TEXT)]
    assert texts == [LAMPS, BAKING, LAMPS]


def test_percentile_mode_breaks_at_the_largest_drops() -> None:
    chunker = SemanticChunker(SemanticConfig(breakpoint="percentile", breakpoint_percentile=70, min_size=0, max_size=1000), embedder=CountingEmbedder())
    texts = [TEXT[a:b] for a, b in chunker.spans(TEXT)]
    assert texts == [LAMPS, BAKING, LAMPS]


def test_min_size_merges_and_max_size_bounds() -> None:
    embedder = CountingEmbedder()
    merged = SemanticChunker(SemanticConfig(breakpoint="threshold", breakpoint_threshold=0.99, min_size=120, max_size=1000), embedder=embedder)
    spans = merged.spans(TEXT)
    assert all(b - a >= 120 for a, b in spans[:-1])
    bounded = SemanticChunker(SemanticConfig(breakpoint="threshold", breakpoint_threshold=-1.0, min_size=0, max_size=60), embedder=embedder)
    spans = bounded.spans(TEXT)
    check_spans(TEXT, spans, 60)


def test_a_unit_over_max_size_is_split_recursively() -> None:
    text = "word " * 100 + "end."
    chunker = SemanticChunker(SemanticConfig(min_size=0, max_size=50), embedder=CountingEmbedder())
    spans = chunker.spans(text)
    check_spans(text, spans, 50)
    assert len(spans) >= 10


def test_embeds_units_in_batches_of_the_embedder() -> None:
    embedder = CountingEmbedder()
    embedder.batch_size = 3
    text = " ".join(f"Sentence number {i} is here." for i in range(10))
    SemanticChunker(SemanticConfig(), embedder=embedder).spans(text)
    assert embedder.texts == 10 and embedder.calls == 4


def test_fingerprint_names_the_embedder_model() -> None:
    a = SemanticChunker(SemanticConfig(), embedder=CountingEmbedder(dim=64))
    b = SemanticChunker(SemanticConfig(), embedder=CountingEmbedder(dim=128))
    assert a.embedder.model_id in a.fingerprint and a.fingerprint != b.fingerprint


def test_needs_an_embedder() -> None:
    with pytest.raises(ConfigError, match="embedder"):
        SemanticChunker(SemanticConfig(), embedder=None)


def test_invalid_sizes_are_rejected() -> None:
    with pytest.raises(ValueError, match="min_size"):
        SemanticConfig(min_size=100, max_size=50)


def test_whitespace_units_are_never_sent_and_zero_vectors_do_not_break() -> None:
    embedder = CountingEmbedder()
    text = "\n\n   \n\nFirst sentence. Second sentence.\n\n \n\n"
    spans = SemanticChunker(SemanticConfig(min_size=0), embedder=embedder).spans(text)
    check_spans(text, spans, 1500)
    assert embedder.texts == 2
    sims = neighbour_similarities(np.array([[1, 0], [0, 0], [0, 1]], dtype=np.float32))
    assert sims.tolist() == [1.0, 1.0]


def test_async_and_concurrent_use_give_the_sync_result() -> None:
    chunker = SemanticChunker(SemanticConfig(min_size=0, max_size=200), embedder=CountingEmbedder())
    documents = [Document.create(TEXT * (i + 1), f"d{i}") for i in range(4)]
    expected = [[c.text for c in check_chunks(chunker, d.text)] for d in documents]

    async def run() -> list[list[str]]:
        results = await asyncio.gather(*(chunker.achunk(d) for d in documents))
        return [[c.text for c in chunks] for chunks in results]

    assert asyncio.run(run()) == expected

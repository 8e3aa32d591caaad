"""Property tests for every chunker on arbitrary Unicode text, repeated passages included."""

from __future__ import annotations

from functools import lru_cache

import pytest
import reference_recursive
from chunker_checks import MINILM_TOKENIZER, check_chunks, check_spans, covering, texts
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.chunkers import (
    FixedChunker,
    FixedConfig,
    MarkdownChunker,
    MarkdownConfig,
    RecursiveChunker,
    RecursiveConfig,
    SemanticChunker,
    SemanticConfig,
    SentenceChunker,
    SentenceConfig,
)
from ragloom.chunkers.markdown import frontmatter_end
from ragloom.chunkers.tokens import TokenMeasure, load_token_starts
from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
sizes = st.integers(min_value=1, max_value=60).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))
separators = st.lists(st.sampled_from(["\n\n", "\n", ". ", " ", "|", "ab", "aa", "é"]), min_size=0, max_size=4, unique=True).map(tuple)


@lru_cache(maxsize=1)
def embedder() -> HashEmbedder:
    return HashEmbedder(HashEmbedderConfig(dim=64, batch_size=7))


@lru_cache(maxsize=1)
def token_starts():  # type: ignore[no-untyped-def]
    return load_token_starts(str(MINILM_TOKENIZER))[0]


@pytest.mark.parametrize(("chunker_class", "config_class"), [(FixedChunker, FixedConfig), (SentenceChunker, SentenceConfig)], ids=["fixed", "sentence"])
@PROPERTY
@given(text=texts, sizes=sizes)
def test_fixed_and_sentence(chunker_class: type, config_class: type, text: str, sizes: tuple[int, int]) -> None:
    size, overlap = sizes
    chunker = chunker_class(config_class(size=size, overlap=overlap))
    check_spans(text, chunker.spans(text), size)
    check_chunks(chunker, text)


@PROPERTY
@given(text=texts, sizes=sizes, separators=separators)
def test_recursive(text: str, sizes: tuple[int, int], separators: tuple[str, ...]) -> None:
    size, overlap = sizes
    chunker = RecursiveChunker(RecursiveConfig(size=size, overlap=overlap, separators=separators))
    spans = chunker.spans(text)
    check_spans(text, spans, size)
    check_chunks(chunker, text)
    # the fast splitter gives exactly the spans of the plain-Python original
    reference = reference_recursive.RecursiveChunker(reference_recursive.RecursiveConfig(size=size, overlap=overlap, separators=separators))
    assert spans == covering(reference.spans(text))


@PROPERTY
@given(text=texts, sizes=sizes)
def test_markdown(text: str, sizes: tuple[int, int]) -> None:
    size, overlap = sizes
    chunker = MarkdownChunker(MarkdownConfig(size=size, overlap=overlap))
    spans, paths = chunker.spans_with_headings(text)
    body = frontmatter_end(text)
    assert all(start >= body for start, _ in spans), "frontmatter is never chunked"
    check_spans(text, spans, size, covered_from=body)
    chunks = check_chunks(chunker, text)
    assert [c.metadata["headings"] for c in chunks] == paths
    assert all(isinstance(p, list) and all(isinstance(t, str) for t in p) for p in paths)


@PROPERTY
@given(text=texts, bounds=st.tuples(st.integers(0, 40), st.integers(1, 80)), mode=st.sampled_from(["percentile", "threshold"]))
def test_semantic(text: str, bounds: tuple[int, int], mode: str) -> None:
    min_size, extra = bounds
    config = SemanticConfig(min_size=min_size, max_size=min_size + extra, breakpoint=mode, breakpoint_threshold=0.2)  # type: ignore[arg-type]
    chunker = SemanticChunker(config, embedder=embedder())
    check_spans(text, chunker.spans(text), config.max_size)
    check_chunks(chunker, text)


@PROPERTY
@given(text=texts, sizes=sizes, kind=st.sampled_from(["recursive", "sentence"]))
def test_token_sizing(text: str, sizes: tuple[int, int], kind: str) -> None:
    size, overlap = sizes
    options = dict(size=size, overlap=overlap, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER))
    chunker = RecursiveChunker(RecursiveConfig(**options)) if kind == "recursive" else SentenceChunker(SentenceConfig(**options))  # type: ignore[arg-type]
    tokens = TokenMeasure(token_starts()(text), len(text))
    # WordPiece never starts two tokens at one character, so no atom can exceed the size
    check_spans(text, chunker.spans(text), size, measure=tokens.measure)
    check_chunks(chunker, text)


@pytest.mark.parametrize(
    ("chunker", "text"),
    [
        (RecursiveChunker(RecursiveConfig(size=9, overlap=4)), "\n000 0000 0"),
        (MarkdownChunker(MarkdownConfig(size=9, overlap=4)), "\n000 0000 0"),
        (SentenceChunker(SentenceConfig(size=9, overlap=4)), "\n000 0000 0"),
        (FixedChunker(FixedConfig(size=2, overlap=1)), " 00"),
    ],
)
def test_found_by_hypothesis_leading_whitespace_overlap(chunker: object, text: str) -> None:
    check_spans(text, chunker.spans(text), chunker.config.size)  # type: ignore[attr-defined]


@pytest.mark.parametrize("passage", ["The lamp glows. ", "a\n\nb ", "Ünïcödé 😀 text. "])
def test_repeated_passages_get_their_own_offsets(passage: str) -> None:
    text = passage * 200
    for chunker in (
        RecursiveChunker(RecursiveConfig(size=50, overlap=20)),
        SentenceChunker(SentenceConfig(size=50, overlap=20)),
        MarkdownChunker(MarkdownConfig(size=50, overlap=20)),
        FixedChunker(FixedConfig(size=50, overlap=20)),
        SemanticChunker(SemanticConfig(min_size=10, max_size=50), embedder=embedder()),
    ):
        spans = chunker.spans(text)
        check_spans(text, spans, 50)
        assert spans[-1][1] == len(text.rstrip()), type(chunker).__name__

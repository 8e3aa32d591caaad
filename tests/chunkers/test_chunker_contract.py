"""Every built-in chunker passes ragloom.testing.ChunkerContract, as a third-party chunker would."""

from __future__ import annotations

from functools import lru_cache

from chunker_checks import MINILM_TOKENIZER

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
from ragloom.testing import ChunkerContract
from ragloom.types import Chunk


class TestFixed(ChunkerContract):
    max_size, max_overlap = 24, 8

    def make_chunker(self) -> FixedChunker:
        return FixedChunker(FixedConfig(size=24, overlap=8))


class TestRecursive(ChunkerContract):
    max_size, max_overlap = 30, 10

    def make_chunker(self) -> RecursiveChunker:
        return RecursiveChunker(RecursiveConfig(size=30, overlap=10))


class TestRecursiveNoOverlap(ChunkerContract):
    max_size = 7

    def make_chunker(self) -> RecursiveChunker:
        return RecursiveChunker(RecursiveConfig(size=7, overlap=0))


class TestSentence(ChunkerContract):
    max_size, max_overlap = 40, 15

    def make_chunker(self) -> SentenceChunker:
        return SentenceChunker(SentenceConfig(size=40, overlap=15))


class TestMarkdown(ChunkerContract):
    max_size, max_overlap = 50, 10

    def make_chunker(self) -> MarkdownChunker:
        return MarkdownChunker(MarkdownConfig(size=50, overlap=10))

    def covered_from(self, text: str) -> int:
        return frontmatter_end(text)  # frontmatter is metadata, never chunked


@lru_cache(maxsize=1)
def _embedder() -> HashEmbedder:
    return HashEmbedder(HashEmbedderConfig(dim=32))


class TestSemantic(ChunkerContract):
    max_size = 60

    def make_chunker(self) -> SemanticChunker:
        return SemanticChunker(SemanticConfig(min_size=10, max_size=60), embedder=_embedder())


@lru_cache(maxsize=1)
def _token_starts():  # type: ignore[no-untyped-def]
    return load_token_starts(str(MINILM_TOKENIZER))[0]


class TestRecursiveTokens(ChunkerContract):
    max_size, max_overlap = 12, 200  # overlap is counted in tokens, so any number of characters

    def make_chunker(self) -> RecursiveChunker:
        return RecursiveChunker(RecursiveConfig(size=12, overlap=4, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))

    def measure(self, chunk: Chunk) -> int:
        return TokenMeasure(_token_starts()(chunk.text), len(chunk.text)).measure(0, len(chunk.text))

"""What the packing chunkers share (``recursive``, ``sentence``): sizes in characters or tokens, piece packing.

A packing chunker cuts the text into pieces that each fit ``size`` and packs
them greedily into chunks, carrying whole trailing pieces as overlap; it only
decides where pieces end (:meth:`PackingChunker.pieces`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from ragloom.chunkers.base import fingerprint_of, spans_to_chunks
from ragloom.chunkers.pieces import pack, split_ends, split_ends_measured, trimmed_spans
from ragloom.chunkers.tokens import TokenMeasure, load_token_starts
from ragloom.types import Chunk, Document

#: Coarse to fine: paragraphs, lines, sentence ends, spaces.
DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", " ")

SizeUnit = Literal["chars", "tokens"]


class Sizing:
    """The unit sizes are measured in: characters, or tokens of a loaded tokenizer."""

    def __init__(self, size_unit: str, tokenizer: str, base_dir: Path | None):
        self.tokens = size_unit == "tokens"
        self.token_starts = None
        self.digest = ""
        if self.tokens:
            self.token_starts, self.digest = load_token_starts(tokenizer, base_dir)

    def measure(self, text: str) -> TokenMeasure | None:
        """Token coordinates of ``text``, or None when sizes are characters."""
        if self.token_starts is None:
            return None
        return TokenMeasure(self.token_starts(text), len(text), text=text, tokenize=self.token_starts)

    def fingerprint(self, name: str, config: object) -> str:
        """The chunker fingerprint, naming the tokenizer's content when sizes are tokens."""
        base = fingerprint_of(name, config)
        return f"{base}:tokenizer={self.digest}" if self.tokens else base


def boundaries(text: str, start: int, end: int, separators: tuple[str, ...], size: int, tokens: TokenMeasure | None) -> list[int]:
    """``[start, piece ends...]`` for ``text[start:end]``, each piece within ``size``."""
    bounds = [start]
    if tokens is None:
        split_ends(text, start, end, separators, size, bounds)
    else:
        split_ends_measured(text, start, end, separators, size, tokens.measure, tokens.hard_cuts, bounds)
    return bounds


def coordinates(bounds: list[int], tokens: TokenMeasure | None) -> list[int]:
    """Sizes-so-far at each boundary: the offsets themselves, or token counts."""
    return bounds if tokens is None else tokens.coords(bounds)


class PackingChunker:
    """Cut the text into pieces that fit ``size``, then pack them into chunks (chars or tokens).

    A subclass names itself, its config class and how it cuts pieces.
    """

    name = ""
    config_class: type  # an attrs class with size, overlap, size_unit, tokenizer

    def __init__(self, config: Any = None, *, base_dir: Path | None = None):
        self.config = config or self.config_class()
        self.sizing = Sizing(self.config.size_unit, self.config.tokenizer, base_dir)
        self.fingerprint = self.sizing.fingerprint(self.name, self.config)

    def pieces(self, text: str, tokens: TokenMeasure | None) -> list[int]:
        """``[0, piece ends...]`` of ``text``, each piece within ``size``."""
        raise NotImplementedError

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Trimmed ``(start, end)`` spans of the chunks."""
        if not text:
            return []
        tokens = self.sizing.measure(text)
        bounds = self.pieces(text, tokens)
        return trimmed_spans(text, bounds, pack(coordinates(bounds, tokens), self.config.size, self.config.overlap))

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of the document."""
        return spans_to_chunks(document, self.spans(document.text))

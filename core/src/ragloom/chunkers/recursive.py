"""The ``recursive`` chunker: split at the coarsest separator that fits.

The text is cut into pieces at paragraph breaks; a piece still over ``size``
is cut at line breaks, then after sentence ends (``". "``), then at spaces,
and as a last resort every ``size`` characters (tokens: at token starts). A
separator stays at the end of the piece before it, so sentence punctuation is
kept. Pieces are then packed greedily into chunks of at most ``size``. Offsets
are computed, never searched for, so repeated passages get the right spans.

Overlap: a new chunk starts with the trailing pieces of the previous chunk
that fit in ``overlap`` (whole pieces only, and leaving room for the next
piece), never at or before the previous chunk's start, so no chunk is
contained in its predecessor. Chunk edges are trimmed of whitespace;
whitespace-only chunks are dropped. No chunk is ever over ``size``.

``size_unit = "tokens"`` measures ``size`` and ``overlap`` in tokens of
``tokenizer`` (see :mod:`ragloom.chunkers.tokens`); offsets stay characters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import attrs

from ragloom.chunkers.base import check_separators, check_sizes, fingerprint_of, spans_to_chunks
from ragloom.chunkers.pieces import pack, split_ends, split_ends_measured, trimmed_spans
from ragloom.chunkers.tokens import TokenMeasure, load_token_starts
from ragloom.types import Chunk, Document

DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", " ")

SizeUnit = Literal["chars", "tokens"]


@attrs.frozen(kw_only=True)
class RecursiveConfig:
    """At most ``size`` per chunk, ``overlap`` carried over, ``separators`` coarse to fine."""

    size: int = attrs.field(default=1000, validator=attrs.validators.gt(0))
    overlap: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    separators: tuple[str, ...] = attrs.field(default=DEFAULT_SEPARATORS)
    size_unit: SizeUnit = attrs.field(default="chars", validator=attrs.validators.in_(("chars", "tokens")))
    tokenizer: str = ""

    def __attrs_post_init__(self) -> None:
        check_sizes(self.size, self.overlap, self.size_unit, self.tokenizer)
        check_separators(self.separators)


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
    config_class: type = RecursiveConfig

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


class RecursiveChunker(PackingChunker):
    """Separator-aware splitting with exact offsets and bounded size."""

    name = "recursive"
    config_class = RecursiveConfig
    config: RecursiveConfig

    def pieces(self, text: str, tokens: TokenMeasure | None) -> list[int]:
        """``[0, piece ends...]``: cut at the coarsest separator that fits."""
        return boundaries(text, 0, len(text), self.config.separators, self.config.size, tokens)

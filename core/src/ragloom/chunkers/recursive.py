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
from typing import Literal

import attrs

from ragloom.chunkers.base import fingerprint_of, spans_to_chunks
from ragloom.chunkers.pieces import pack, split_ends, split_ends_measured, trimmed_spans
from ragloom.chunkers.tokens import TokenMeasure, load_token_starts
from ragloom.types import Chunk, Document

DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", " ")

SizeUnit = Literal["chars", "tokens"]


def check_sizes(size: int, overlap: int, size_unit: str, tokenizer: str) -> None:
    """Shared validation of the sizing options."""
    if overlap >= size:
        raise ValueError(f"'overlap' ({overlap}) must be smaller than 'size' ({size})")
    if size_unit == "tokens" and not tokenizer:
        raise ValueError("size_unit = 'tokens' needs 'tokenizer' (a tokenizer.json path or 'tiktoken:NAME')")


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
        if any(not s for s in self.separators):
            raise ValueError("'separators' must not contain an empty string")


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
        return TokenMeasure(self.token_starts(text), len(text))

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
    return bounds if tokens is None else [tokens.coord(b) for b in bounds]


class RecursiveChunker:
    """Separator-aware splitting with exact offsets and bounded size."""

    def __init__(self, config: RecursiveConfig | None = None, *, base_dir: Path | None = None):
        self.config = config or RecursiveConfig()
        self.sizing = Sizing(self.config.size_unit, self.config.tokenizer, base_dir)
        self.fingerprint = self.sizing.fingerprint("recursive", self.config)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Trimmed ``(start, end)`` spans of the chunks."""
        if not text:
            return []
        c = self.config
        tokens = self.sizing.measure(text)
        bounds = boundaries(text, 0, len(text), c.separators, c.size, tokens)
        return trimmed_spans(text, bounds, pack(coordinates(bounds, tokens), c.size, c.overlap))

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of the document."""
        return spans_to_chunks(document, self.spans(document.text))

"""Reference (the original, plain-Python recursive splitter): the oracle for the fast one.

Kept verbatim from the first version of ``ragloom.chunkers.recursive`` so the
rewritten, faster splitter can be checked span for span against it.

The ``recursive`` chunker: split at the coarsest separator that fits.

The text is cut into pieces at paragraph breaks; a piece still over ``size``
is cut at line breaks, then after sentence ends (``". "``), then at spaces,
and as a last resort every ``size`` characters. A separator stays at the end
of the piece before it, so sentence punctuation is kept. Pieces are then
packed greedily into chunks of at most ``size`` characters. Offsets are
computed, never searched for, so repeated passages get the right spans.

Overlap: a new chunk starts with the trailing pieces of the previous chunk
that fit in ``overlap`` characters (whole pieces only), never at or before the
previous chunk's start, so no chunk is contained in its predecessor.
Chunk edges are trimmed of whitespace; whitespace-only chunks are dropped.
"""

from __future__ import annotations

import attrs

from ragloom.chunkers.base import drop_contained, fingerprint_of, spans_to_chunks, trim_span
from ragloom.types import Chunk, Document

DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", " ")


@attrs.frozen(kw_only=True)
class RecursiveConfig:
    """At most ``size`` characters per chunk, ``overlap`` carried over, ``separators`` coarse to fine."""

    size: int = attrs.field(default=1000, validator=attrs.validators.gt(0))
    overlap: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    separators: tuple[str, ...] = attrs.field(default=DEFAULT_SEPARATORS)

    def __attrs_post_init__(self) -> None:
        if self.overlap >= self.size:
            raise ValueError(f"'overlap' ({self.overlap}) must be smaller than 'size' ({self.size})")
        if any(not s for s in self.separators):
            raise ValueError("'separators' must not contain an empty string")


def split_pieces(text: str, start: int, end: int, separators: tuple[str, ...], size: int, out: list[int]) -> None:
    """Append the end offsets of pieces (each at most ``size`` long) covering ``text[start:end]``."""
    if end - start <= size:
        out.append(end)
        return
    for level, separator in enumerate(separators):
        position = text.find(separator, start, end)
        if position == -1:
            continue
        finer = separators[level + 1 :]
        piece_start = start
        width = len(separator)
        while position != -1:
            cut = position + width
            if cut - piece_start <= size:
                out.append(cut)
            else:
                split_pieces(text, piece_start, cut, finer, size, out)
            piece_start = cut
            position = text.find(separator, piece_start, end)
        if piece_start < end:
            if end - piece_start <= size:
                out.append(end)
            else:
                split_pieces(text, piece_start, end, finer, size, out)
        return
    out.extend(range(start + size, end, size))
    out.append(end)


def pack(ends: list[int], start: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedily pack consecutive pieces (given by their end offsets) into spans."""
    spans: list[tuple[int, int]] = []
    starts = [start, *ends[:-1]]
    chunk_start = start
    first_piece = 0
    for i, piece_end in enumerate(ends):
        if piece_end - chunk_start <= size:
            continue
        previous_end = starts[i]
        spans.append((chunk_start, previous_end))
        new_start = starts[i]
        j = i
        while overlap and j - 1 > first_piece and previous_end - starts[j - 1] <= overlap and piece_end - starts[j - 1] <= size:
            j -= 1
        new_start = starts[j]
        chunk_start, first_piece = new_start, j
    spans.append((chunk_start, ends[-1]))
    return spans


class RecursiveChunker:
    """Separator-aware splitting with exact offsets and bounded size."""

    def __init__(self, config: RecursiveConfig | None = None):
        self.config = config or RecursiveConfig()
        self.fingerprint = fingerprint_of("recursive", self.config)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Trimmed ``(start, end)`` spans of the chunks."""
        if not text:
            return []
        c = self.config
        ends: list[int] = []
        split_pieces(text, 0, len(text), c.separators, c.size, ends)
        return drop_contained(trim_span(text, s, e) for s, e in pack(ends, 0, c.size, c.overlap))

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of the document."""
        return spans_to_chunks(document, self.spans(document.text))

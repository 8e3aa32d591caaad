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

import attrs

from ragloom.chunkers.base import check_separators, check_sizes
from ragloom.chunkers.packing import DEFAULT_SEPARATORS, PackingChunker, SizeUnit, boundaries
from ragloom.chunkers.tokens import TokenMeasure

__all__ = ["DEFAULT_SEPARATORS", "RecursiveChunker", "RecursiveConfig", "SizeUnit"]


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


class RecursiveChunker(PackingChunker):
    """Separator-aware splitting with exact offsets and bounded size."""

    name = "recursive"
    config_class = RecursiveConfig
    config: RecursiveConfig

    def pieces(self, text: str, tokens: TokenMeasure | None) -> list[int]:
        """``[0, piece ends...]``: cut at the coarsest separator that fits."""
        return boundaries(text, 0, len(text), self.config.separators, self.config.size, tokens)

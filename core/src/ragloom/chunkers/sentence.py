"""The ``sentence`` chunker: whole sentences packed up to ``size``.

Sentence boundaries come from :mod:`ragloom.chunkers.sentences` (no model;
abbreviations, decimals and ellipses don't end a sentence). A sentence longer than ``size``
is cut by the recursive splitter (lines, then spaces, then every ``size``),
so no chunk is ever over ``size``. Overlap: like ``recursive``, a chunk starts
with the trailing whole sentences of the previous chunk that fit in
``overlap``, never at or before the previous chunk's start.
"""

from __future__ import annotations

import attrs

from ragloom.chunkers.base import check_sizes
from ragloom.chunkers.packing import PackingChunker, SizeUnit
from ragloom.chunkers.sentences import sentence_pieces
from ragloom.chunkers.tokens import TokenMeasure


@attrs.frozen(kw_only=True)
class SentenceConfig:
    """Whole sentences up to ``size`` per chunk, ``overlap`` in whole sentences."""

    size: int = attrs.field(default=1000, validator=attrs.validators.gt(0))
    overlap: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    size_unit: SizeUnit = attrs.field(default="chars", validator=attrs.validators.in_(("chars", "tokens")))
    tokenizer: str = ""

    def __attrs_post_init__(self) -> None:
        check_sizes(self.size, self.overlap, self.size_unit, self.tokenizer)


class SentenceChunker(PackingChunker):
    """Sentence-aware packing with exact offsets and bounded size."""

    name = "sentence"
    config_class = SentenceConfig
    config: SentenceConfig

    def pieces(self, text: str, tokens: TokenMeasure | None) -> list[int]:
        """``[0, piece ends...]``: sentences, each long one cut to fit ``size``."""
        return sentence_pieces(text, 0, len(text), self.config.size, tokens)

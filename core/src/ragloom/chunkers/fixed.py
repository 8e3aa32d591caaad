"""The ``fixed`` chunker: windows of ``size`` characters, ``overlap`` shared."""

from __future__ import annotations

import attrs

from ragloom.chunkers.base import check_sizes, drop_contained, fingerprint_of, spans_to_chunks, trim_span
from ragloom.types import Chunk, Document


@attrs.frozen(kw_only=True)
class FixedConfig:
    """``size`` characters per window; consecutive windows share ``overlap`` characters."""

    size: int = attrs.field(default=1000, validator=attrs.validators.gt(0))
    overlap: int = attrs.field(default=0, validator=attrs.validators.ge(0))

    def __attrs_post_init__(self) -> None:
        check_sizes(self.size, self.overlap)


class FixedChunker:
    """Cuts text every ``size - overlap`` characters; edges trimmed of whitespace."""

    def __init__(self, config: FixedConfig | None = None):
        self.config = config or FixedConfig()
        self.fingerprint = fingerprint_of("fixed", self.config)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Trimmed windows; whitespace-only windows dropped."""
        size, step = self.config.size, self.config.size - self.config.overlap
        spans = []
        for start in range(0, len(text), step):
            spans.append(trim_span(text, start, min(start + size, len(text))))
            if start + size >= len(text):
                break
        return drop_contained(spans)

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of the document."""
        return spans_to_chunks(document, self.spans(document.text))

"""The ``semantic`` chunker: break where neighbouring sentences change topic.

1. The text is cut into units: sentences and blank-line-separated blocks
   (the ``sentence`` chunker's boundaries); a unit longer than ``max_size`` is
   cut recursively (lines, then spaces, then every ``max_size``).
2. Every unit is embedded with the pipeline's embedder, ``batch_size`` texts
   per call, and the cosine similarity of each pair of neighbours computed.
3. A breakpoint is where the similarity drops: below ``breakpoint_threshold``
   (``breakpoint = "threshold"``), or where the distance ``1 - similarity`` is
   above the ``breakpoint_percentile``-th percentile of the document's
   distances (``breakpoint = "percentile"``, the default).
4. Units are merged into segments: a segment ends at a breakpoint once it has
   ``min_size`` characters, and always before it would pass ``max_size``.

So no chunk is over ``max_size`` characters (units were cut to fit), and only
a document's last segment can be under ``min_size``. There is no overlap.
The fingerprint names the embedder's ``model_id``: another model re-chunks.
The chunker keeps no state between calls, so threads and ``achunk`` (for
asyncio) may use one instance at once.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Literal

import attrs
import numpy as np

from ragloom.chunkers.base import fingerprint_of, spans_to_chunks, trim_span
from ragloom.chunkers.sentences import sentence_pieces
from ragloom.embedders.base import Embedder, embed_in_batches
from ragloom.errors import ConfigError
from ragloom.types import Chunk, Document


@attrs.frozen(kw_only=True)
class SemanticConfig:
    """Segments between ``min_size`` and ``max_size`` characters, cut where similarity drops."""

    breakpoint: Literal["percentile", "threshold"] = attrs.field(default="percentile", validator=attrs.validators.in_(("percentile", "threshold")))
    breakpoint_threshold: float = attrs.field(default=0.5, validator=[attrs.validators.ge(-1.0), attrs.validators.le(1.0)])
    breakpoint_percentile: float = attrs.field(default=90.0, validator=[attrs.validators.ge(0.0), attrs.validators.le(100.0)])
    min_size: int = attrs.field(default=200, validator=attrs.validators.ge(0))
    max_size: int = attrs.field(default=1500, validator=attrs.validators.gt(0))

    def __attrs_post_init__(self) -> None:
        if self.min_size > self.max_size:
            raise ValueError(f"'min_size' ({self.min_size}) must not exceed 'max_size' ({self.max_size})")


def neighbour_similarities(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row with the next (1.0 where a row is all zeros)."""
    if len(vectors) < 2:
        return np.zeros(0, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    safe = np.where(norms > 0, norms, 1.0)
    unit = vectors / safe[:, None]
    similarities = np.einsum("ij,ij->i", unit[:-1], unit[1:])
    similarities[(norms[:-1] == 0) | (norms[1:] == 0)] = 1.0
    return similarities


class SemanticChunker:
    """Embedding-similarity segmentation bounded by ``min_size`` and ``max_size``."""

    def __init__(self, config: SemanticConfig | None = None, *, embedder: Embedder | None):
        if embedder is None:
            raise ConfigError("the semantic chunker needs the pipeline's embedder")
        self.config = config or SemanticConfig()
        self.embedder = embedder
        self.fingerprint = fingerprint_of("semantic", self.config) + f":embedder={embedder.model_id}"

    def breakpoints(self, similarities: np.ndarray) -> np.ndarray:
        """Boolean per neighbour pair: break between unit ``i`` and ``i + 1``."""
        c = self.config
        if len(similarities) == 0:
            return np.zeros(0, dtype=bool)
        if c.breakpoint == "threshold":
            return similarities < c.breakpoint_threshold
        distances = 1.0 - similarities.astype(np.float64)
        return distances > np.percentile(distances, c.breakpoint_percentile)

    def _embed(self, units: list[str]) -> np.ndarray:
        """One row per unit, in batches; whitespace-only units get zero rows (never sent)."""
        present = [i for i, unit in enumerate(units) if unit]
        vectors = embed_in_batches(self.embedder, [units[i] for i in present])
        if len(present) == len(units):
            return vectors
        full = np.zeros((len(units), vectors.shape[1]), dtype=np.float32)
        full[present] = vectors
        return full

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Trimmed ``(start, end)`` spans of the segments."""
        if not text.strip():
            return []
        c = self.config
        bounds = sentence_pieces(text, 0, len(text), c.max_size, None)
        units = [text[a:b].strip() for a, b in itertools.pairwise(bounds)]
        breaks = self.breakpoints(neighbour_similarities(self._embed(units))).tolist() if len(units) > 1 else []
        spans: list[tuple[int, int]] = []
        segment_start = bounds[0]
        for i, is_break in enumerate(breaks):
            end, following = bounds[i + 1], bounds[i + 2]
            if (is_break and end - segment_start >= c.min_size) or following - segment_start > c.max_size:
                spans.append(trim_span(text, segment_start, end))
                segment_start = end
        spans.append(trim_span(text, segment_start, bounds[-1]))
        return [s for s in spans if s[1] > s[0]]

    def chunk(self, document: Document) -> list[Chunk]:
        """Chunks of the document."""
        return spans_to_chunks(document, self.spans(document.text))

    async def achunk(self, document: Document) -> list[Chunk]:
        """:meth:`chunk` in a worker thread, for asyncio code."""
        return await asyncio.to_thread(self.chunk, document)

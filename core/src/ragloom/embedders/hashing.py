"""The ``hash`` embedder: offline, deterministic, lexical feature hashing.

Each text becomes a bag of features — lower-cased words (English stop words
dropped unless ``stopwords = "none"``) and the character
n-grams of each word (padded with ``#``) — hashed (CRC32) into ``dim`` buckets
with a sign taken from the hash, weighted by ``1 + log(count)``, and
L2-normalised. No model, no network; similar wording gives similar vectors.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Literal

import attrs
import numpy as np

from ragloom.embedders.base import DEFAULT_BATCH_SIZE
from ragloom.stopwords import ENGLISH_STOP_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)


@attrs.frozen(kw_only=True)
class HashEmbedderConfig:
    """Options of the hash embedder."""

    dim: int = attrs.field(default=512, validator=[attrs.validators.ge(8), attrs.validators.le(65536)])
    ngram_min: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    ngram_max: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    word_weight: float = attrs.field(default=1.0, validator=attrs.validators.ge(0))
    ngram_weight: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    stopwords: Literal["english", "none"] = "english"
    batch_size: int = attrs.field(default=DEFAULT_BATCH_SIZE, validator=attrs.validators.gt(0))

    def __attrs_post_init__(self) -> None:
        if self.ngram_max < self.ngram_min:
            raise ValueError(f"'ngram_max' ({self.ngram_max}) must be >= 'ngram_min' ({self.ngram_min})")


class HashEmbedder:
    """Signed feature hashing of words and character n-grams."""

    def __init__(self, config: HashEmbedderConfig | None = None):
        self.config = config or HashEmbedderConfig()
        c = self.config
        self.dim = c.dim
        self.batch_size = c.batch_size
        self.model_id = (
            f"hash-v1:dim={c.dim}:ngrams={c.ngram_min}-{c.ngram_max}:w={c.word_weight}:n={c.ngram_weight}:stop={c.stopwords}"
        )
        self._stopwords = ENGLISH_STOP_WORDS if c.stopwords == "english" else frozenset()
        self._features = lru_cache(maxsize=200_000)(self._word_features)

    def _word_features(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        c = self.config
        keys = [f"w\x00{word}"]
        weights = [c.word_weight]
        if c.ngram_weight > 0:
            padded = f"#{word}#"
            for n in range(c.ngram_min, c.ngram_max + 1):
                for i in range(0, max(len(padded) - n + 1, 0)):
                    keys.append(f"g\x00{padded[i:i + n]}")
                    weights.append(c.ngram_weight)
        hashes = np.fromiter((zlib.crc32(k.encode("utf-8")) for k in keys), dtype=np.uint64, count=len(keys))
        buckets = (hashes % np.uint64(self.dim)).astype(np.int64)
        signs = np.where((hashes >> np.uint64(31)) & np.uint64(1), -1.0, 1.0)
        return buckets, (signs * np.asarray(weights)).astype(np.float32)

    def _text_features(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """Buckets and weights of every feature of one text (sublinear term frequency)."""
        stop = self._stopwords
        counts = Counter(w for w in _WORD.findall(text.lower()) if w not in stop)
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        features = [self._features(word) for word in counts]
        scale = np.repeat([1.0 + math.log(count) for count in counts.values()], [len(b) for b, _ in features])
        return np.concatenate([b for b, _ in features]), np.concatenate([w for _, w in features]) * scale

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised row per text: one ``bincount`` per batch, no per-feature Python loop."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), 256):  # bounds the float64 scratch space
            part = [self._text_features(text) for text in texts[start : start + 256]]
            rows = np.repeat(np.arange(len(part)), [len(b) for b, _ in part])
            flat = rows * self.dim + np.concatenate([b for b, _ in part])
            sums = np.bincount(flat, weights=np.concatenate([w for _, w in part]), minlength=len(part) * self.dim)
            out[start : start + len(part)] = sums.reshape(len(part), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """The same features as documents."""
        return self.embed_documents([text])[0]

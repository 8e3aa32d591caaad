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

    def _embed_one(self, text: str, out: np.ndarray) -> None:
        stop = self._stopwords
        counts = Counter(w for w in _WORD.findall(text.lower()) if w not in stop)
        for word, count in counts.items():
            buckets, weights = self._features(word)
            np.add.at(out, buckets, weights * (1.0 + math.log(count)))
        norm = float(np.linalg.norm(out))
        if norm > 0:
            out /= norm

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised row per text."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            self._embed_one(text, out[i])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """The same features as documents."""
        return self.embed_documents([text])[0]

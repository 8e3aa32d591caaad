"""The hash embedder's batched implementation gives bit-for-bit the vectors of the original one-word-at-a-time code."""

from __future__ import annotations

import math
import random
import re
import zlib
from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from ragloom.embedders.hashing import HashEmbedder, HashEmbedderConfig
from ragloom.stopwords import ENGLISH_STOP_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)


class ReferenceHashEmbedder:
    """The implementation before the batched rewrite (ragloom 1cf2ac2), kept verbatim as the oracle."""

    def __init__(self, config: HashEmbedderConfig):
        self.config = config
        self.dim = config.dim
        self._stopwords = ENGLISH_STOP_WORDS if config.stopwords == "english" else frozenset()

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
        stop = self._stopwords
        counts = Counter(w for w in _WORD.findall(text.lower()) if w not in stop)
        if not counts:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        features = [self._word_features(word) for word in counts]
        scale = np.repeat([1.0 + math.log(count) for count in counts.values()], [len(b) for b, _ in features])
        return np.concatenate([b for b, _ in features]), np.concatenate([w for _, w in features]) * scale

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), 256):
            part = [self._text_features(text) for text in texts[start : start + 256]]
            rows = np.repeat(np.arange(len(part)), [len(b) for b, _ in part])
            flat = rows * self.dim + np.concatenate([b for b, _ in part])
            sums = np.bincount(flat, weights=np.concatenate([w for _, w in part]), minlength=len(part) * self.dim)
            out[start : start + len(part)] = sums.reshape(len(part), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out


VOCABULARY = (
    "the lamp glows warm and the lamps are dimming a b x ünïcödé straße ﬁle 東京 data_point 42 "
    "protein binding cells expression receptor mutation tumour tumor growth signal pathway ion"
).split()


def sample_texts(count: int, seed: int) -> list[str]:
    """Texts with repeated words (count weights), stop words, Unicode, digits, empty and stop-word-only texts."""
    rng = random.Random(seed)
    texts = ["", "the and of", "!!! ...", "Word", "x" * 300]
    for _ in range(count):
        words = rng.choices(VOCABULARY, k=rng.randint(1, 120))
        texts.append(" ".join(w.upper() if rng.random() < 0.1 else w for w in words) + rng.choice([".", "\n\n", ""]))
    return texts


@pytest.mark.parametrize(
    "config",
    [
        HashEmbedderConfig(),
        HashEmbedderConfig(dim=64, ngram_min=2, ngram_max=5, word_weight=2.0, ngram_weight=0.25, stopwords="none"),
        HashEmbedderConfig(dim=8, ngram_weight=0.0),
        HashEmbedderConfig(dim=384, ngram_min=1, ngram_max=1),
    ],
    ids=["default", "wide-ngrams", "words-only", "unigrams"],
)
def test_vectors_equal_the_reference_bit_for_bit(config: HashEmbedderConfig) -> None:
    fast, reference = HashEmbedder(config), ReferenceHashEmbedder(config)
    texts = sample_texts(280, seed=3)  # more than one 256-text part
    assert np.array_equal(fast.embed_documents(texts), reference.embed_documents(texts))
    # a second call reuses the cached words and learns new ones (another seed, other casing)
    more = sample_texts(50, seed=4) + ["brand new words: zyxwv qwerty"]
    assert np.array_equal(fast.embed_documents(more), reference.embed_documents(more))
    assert np.array_equal(fast.embed_query(texts[7]), reference.embed_documents([texts[7]])[0])


def test_vectors_survive_a_cache_reset() -> None:
    config = HashEmbedderConfig(dim=128)
    fast, reference = HashEmbedder(config), ReferenceHashEmbedder(config)
    fast._MAX_WORDS = 5  # type: ignore[misc]  # force the per-word cache to be dropped between calls
    for seed in range(4):
        texts = sample_texts(30, seed=seed) + [f"unique{seed}a unique{seed}b unique{seed}c"]
        assert np.array_equal(fast.embed_documents(texts), reference.embed_documents(texts))


def test_empty_batch_and_empty_texts() -> None:
    fast = HashEmbedder()
    assert fast.embed_documents([]).shape == (0, 512)
    vectors = fast.embed_documents(["", "the of and"])
    assert not vectors.any()

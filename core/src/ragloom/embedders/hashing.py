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
import threading
import zlib
from collections import Counter
from collections.abc import Sequence
from itertools import chain, filterfalse, repeat
from typing import Literal

import attrs
import numpy as np

from ragloom.embedders.base import DEFAULT_BATCH_SIZE
from ragloom.stopwords import ENGLISH_STOP_WORDS

_WORD = re.compile(r"\w+", re.UNICODE)
_WORD_KEY = zlib.crc32(b"w\x00")  # running CRC32 of a word key's prefix
_GRAM_KEY = zlib.crc32(b"g\x00")  # and of an n-gram key's prefix


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


def _append(array: np.ndarray, used: int, values: np.ndarray) -> np.ndarray:
    """``array`` (of which ``used`` items are filled) with ``values`` after them; grows by doubling."""
    needed = used + len(values)
    if needed > len(array):
        grown = np.zeros(max(needed, 2 * len(array), 1024), dtype=array.dtype)
        grown[:used] = array[:used]
        array = grown
    array[used:needed] = values
    return array


def _crc32_table() -> np.ndarray:
    """zlib's CRC-32 (reflected, polynomial 0xEDB88320) lookup table."""
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0xEDB88320), table >> 1).astype(np.uint32)
    return table


_CRC_TABLE = _crc32_table()


def _crc32_slices(buffer: np.ndarray, starts: np.ndarray, length: int, seed: int) -> np.ndarray:
    """``zlib.crc32(buffer[s : s + length], seed)`` for every ``s`` in ``starts``, one table step per byte for all at once."""
    state = np.full(len(starts), ~seed & 0xFFFFFFFF, dtype=np.uint32)
    for k in range(length):
        state = _CRC_TABLE[(state ^ buffer[starts + k]) & 0xFF] ^ (state >> 8)
    return (~state).astype(np.uint64)


class HashEmbedder:
    """Signed feature hashing of words and character n-grams.

    Speed: each distinct word's features are hashed once and kept in flat
    arrays (``_buckets``/``_weights``, ``_starts``/``_sizes`` per word id); a
    batch is then a ``Counter`` per text plus a few numpy gathers and one
    ``bincount``. Features are summed in the same order as the one-word-at-a-time
    formulation (text, first occurrence of the word, feature), so vectors are
    bit-for-bit the same.
    """

    _MAX_WORDS = 200_000  # bound on the per-word cache (endless vocabularies)
    lexical = True
    """Its vectors see only the words' spelling: ``hybrid`` (``mode = "auto"``) trusts a keyword index over the same text instead."""

    def __init__(self, config: HashEmbedderConfig | None = None):
        self.config = config or HashEmbedderConfig()
        c = self.config
        self.dim = c.dim
        self.batch_size = c.batch_size
        self.model_id = (
            f"hash-v1:dim={c.dim}:ngrams={c.ngram_min}-{c.ngram_max}:w={c.word_weight}:n={c.ngram_weight}:stop={c.stopwords}"
        )
        self._stopwords = ENGLISH_STOP_WORDS if c.stopwords == "english" else frozenset()
        self._lock = threading.Lock()
        self._scales = np.asarray([0.0, 1.0])  # _scales[count] == 1 + math.log(count)
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._ids: dict[str, int] = {}
        self._starts = np.zeros(0, dtype=np.int64)
        self._sizes = np.zeros(0, dtype=np.int64)
        self._buckets = np.zeros(0, dtype=np.int64)
        self._weights = np.zeros(0, dtype=np.float32)
        self._used = 0  # filled length of _buckets and _weights

    def _hashes(self, word: str, out: list[int]) -> None:
        """Append the CRC32 of each padded n-gram key of ``word`` (``g\\0`` + n-gram, by size and position), one at a time.

        For the words :func:`_crc32_slices` cannot take (non-ASCII: their n-grams
        are of characters, not bytes). ``zlib.crc32(data, crc32(prefix))`` is the
        CRC32 of ``prefix + data``, so the keys are never built.
        """
        c = self.config
        crc32 = zlib.crc32
        text = f"#{word}#"
        for n in range(c.ngram_min, c.ngram_max + 1):
            out.extend([crc32(text[i : i + n].encode("utf-8"), _GRAM_KEY) for i in range(0, max(len(text) - n + 1, 0))])

    def _learn(self, words: list[str]) -> None:
        """Hash the features of words not seen yet and append them to the cache (hashes, buckets and signs vectorised)."""
        c = self.config
        hashes, sizes = self._feature_hashes(words)
        buckets = (hashes % np.uint64(self.dim)).astype(np.int64)
        signs = np.where((hashes >> np.uint64(31)) & np.uint64(1), -1.0, 1.0)
        starts = np.cumsum(sizes) - sizes
        weights = np.full(len(hashes), c.ngram_weight, dtype=np.float64)
        weights[starts] = c.word_weight  # each word's first feature is the word itself
        ids = self._ids
        for word in words:
            ids[word] = len(ids)
        self._starts = _append(self._starts, len(ids) - len(words), starts + self._used)
        self._sizes = _append(self._sizes, len(ids) - len(words), sizes)
        self._buckets = _append(self._buckets, self._used, buckets)
        self._weights = _append(self._weights, self._used, (signs * weights).astype(np.float32))
        self._used += len(hashes)

    def _feature_counts(self, words: list[str]) -> np.ndarray:
        """Features per word: the word itself plus its padded character n-grams of each size."""
        c = self.config
        lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words)) + 2  # padded with '#' at both ends
        counts = np.ones(len(words), dtype=np.int64)
        if c.ngram_weight > 0:
            for n in range(c.ngram_min, c.ngram_max + 1):
                counts += np.maximum(lengths - n + 1, 0)
        return counts

    def _feature_hashes(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The CRC32 of every feature key of ``words``, in :meth:`_hashes`' order (one flat ``uint64`` array), and each word's feature count.

        The n-grams of ASCII words (nearly all of them) are hashed together by
        :func:`_crc32_slices` over one byte buffer; other words go through :meth:`_hashes`.
        """
        c = self.config
        sizes = self._feature_counts(words)
        starts = np.cumsum(sizes) - sizes
        out = np.zeros(int(sizes.sum()), dtype=np.uint64)
        crc32 = zlib.crc32
        encoded = [word.encode("utf-8") for word in words]
        out[starts] = [crc32(data, _WORD_KEY) for data in encoded]
        if c.ngram_weight <= 0:
            return out, sizes
        simple = np.fromiter(map(str.isascii, words), dtype=bool, count=len(words))
        for position in np.flatnonzero(~simple).tolist():
            grams: list[int] = []
            self._hashes(words[position], grams)
            out[starts[position] + 1 : starts[position] + 1 + len(grams)] = grams
        chosen = np.flatnonzero(simple)
        if not len(chosen):
            return out, sizes
        buffer = np.frombuffer(b"".join(b"#" + encoded[i] + b"#" for i in chosen.tolist()), dtype=np.uint8)
        padded = np.fromiter((len(encoded[i]) + 2 for i in chosen.tolist()), dtype=np.int64, count=len(chosen))
        offsets = np.cumsum(padded) - padded  # each padded word's first byte in the buffer
        destination = starts[chosen] + 1  # after the word's own feature
        for n in range(c.ngram_min, c.ngram_max + 1):
            counts = np.maximum(padded - n + 1, 0)
            total = int(counts.sum())
            within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
            out[np.repeat(destination, counts) + within] = _crc32_slices(buffer, np.repeat(offsets, counts) + within, n, _GRAM_KEY)
            destination = destination + counts
        return out, sizes

    def _scale_table(self, largest: int) -> np.ndarray:
        if largest >= len(self._scales):
            self._scales = np.asarray([0.0] + [1.0 + math.log(n) for n in range(1, 2 * largest + 1)])
        return self._scales

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One normalised row per text: a ``Counter`` per text, then numpy gathers and one ``bincount`` per 256 texts."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._lock:
            for start in range(0, len(texts), 256):  # bounds the float64 scratch space
                self._embed_part(texts[start : start + 256], out[start : start + 256])
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        out /= norms
        return out

    def _embed_part(self, texts: Sequence[str], out: np.ndarray) -> None:
        stop = self._stopwords
        findall = _WORD.findall
        if stop:  # stop words dropped before counting: the others keep their first-occurrence order
            dropped = stop.__contains__
            counters = [Counter(filterfalse(dropped, findall(text.lower()))) for text in texts]
        else:
            counters = [Counter(findall(text.lower())) for text in texts]
        if len(self._ids) > self._MAX_WORDS:
            self._reset_cache()
        ids = self._ids
        every = list(chain.from_iterable(counters))
        if not every:
            return
        words = np.fromiter(map(ids.get, every, repeat(-1)), dtype=np.int64, count=len(every))  # one pass; -1: not seen yet
        missing = np.flatnonzero(words < 0)
        if len(missing):
            new = [every[i] for i in missing.tolist()]
            self._learn(list(dict.fromkeys(new)))
            words[missing] = [ids[word] for word in new]
        per_text = np.fromiter(map(len, counters), dtype=np.int64, count=len(counters))
        counts = np.fromiter(chain.from_iterable(c.values() for c in counters), dtype=np.int64, count=len(words))
        scales = self._scale_table(int(counts.max()))[counts]
        sizes = self._sizes[words]
        total = int(sizes.sum())
        # position of every feature in the flat cache: the word's start plus 0, 1, ... size - 1
        firsts = np.cumsum(sizes) - sizes
        index = np.repeat(self._starts[words] - firsts, sizes) + np.arange(total, dtype=np.int64)
        rows = np.repeat(np.repeat(np.arange(len(counters), dtype=np.int64), per_text), sizes)
        flat = rows * self.dim + self._buckets[index]
        weights = self._weights[index] * np.repeat(scales, sizes)
        sums = np.bincount(flat, weights=weights, minlength=len(counters) * self.dim)
        out[:] = sums.reshape(len(counters), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        """The same features as documents."""
        return self.embed_documents([text])[0]

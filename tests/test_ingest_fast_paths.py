"""The ingest hot path's shortcuts give exactly what the plain formulation gives.

Chunk records retyped from plain slots, chunk edges trimmed through a window,
separator ends found by ``finditer``, hashes built without a JSON encoder per
call, file names and suffixes read without ``pathlib``, files read from the
descriptor: each is checked here against the formulation it replaced.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from ragloom.chunkers import RecursiveChunker, RecursiveConfig
from ragloom.chunkers.base import spans_to_chunks
from ragloom.chunkers.pieces import trimmed_spans
from ragloom.errors import LoaderError
from ragloom.loaders.base import file_metadata, name_of, read_bytes, suffix_of
from ragloom.types import (
    FAST_CHUNKS,
    Chunk,
    Document,
    content_hash,
    legacy_content_hash,
    metadata_hash,
    same_content,
    with_hashes,
)

sys.path.insert(0, str(Path(__file__).parent / "chunkers"))
import reference_recursive  # noqa: E402

ALPHABET = ["a", "b", " ", "  ", "\n", "\n\n", "\n\n\n", ". ", "\t", "\u00a0", "é", "😀", " " * 40, "\n" * 45, "\u2028"]


def json_digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")).hexdigest()


def test_chunks_built_from_slots_are_ordinary_frozen_chunks() -> None:
    assert FAST_CHUNKS  # CPython accepts the retyping: the fast path is the one tested below
    document = Document.create("alpha beta gamma delta", "notes/a.md", metadata={"lang": "en"}, tags=["x"])
    fast = spans_to_chunks(document, [(0, 10), (6, 16)])
    assert all(type(c) is Chunk for c in fast)
    assert fast[0] == Chunk(
        id=f"{document.id}:0",
        document_id=document.id,
        index=0,
        text="alpha beta",
        start=0,
        end=10,
        source="notes/a.md",
        metadata={"lang": "en", "documentId": document.id, "source": "notes/a.md", "order": 0, "startOffset": 0, "endOffset": 10},
        tags=("x",),
    )
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast[0].text = "changed"  # type: ignore[misc]
    assert attrs.asdict(with_hashes(fast[1], "c", "m")) == attrs.asdict(attrs.evolve(fast[1], content_hash="c", metadata_hash="m"))
    assert "alpha beta" in repr(fast[0])


def test_recursive_chunks_match_the_reference_on_long_whitespace_runs() -> None:
    # whitespace runs longer than the trimming window, at chunk edges, and runs of separators
    rng = random.Random(7)
    for _ in range(300):
        text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 400)))
        size = rng.randint(5, 80)
        overlap = rng.randint(0, size - 1)
        ours = RecursiveChunker(RecursiveConfig(size=size, overlap=overlap))
        reference = reference_recursive.RecursiveChunker(reference_recursive.RecursiveConfig(size=size, overlap=overlap))
        document = Document.create(text, "t.txt")
        assert ours.chunk(document) == reference.chunk(document), (text, size, overlap)


def test_trimmed_spans_strip_exactly_what_str_strip_strips() -> None:
    text = "  " + " " * 50 + "word" + "\n" * 70 + "x" + " \u3000" * 30
    bounds = [0, 10, 52, 56, 126, 127, len(text)]
    pairs = [(0, 1), (0, 2), (1, 3), (2, 4), (3, 4), (3, 5), (4, 6), (5, 6)]
    expected: list[tuple[int, int]] = []
    for i, j in pairs:
        start, end = bounds[i], bounds[j]
        piece = text[start:end]
        start, end = start + len(piece) - len(piece.lstrip()), start + len(piece.rstrip())
        if end <= start or (expected and start >= expected[-1][0] and end <= expected[-1][1]):
            continue
        if expected and start == expected[-1][0]:
            expected.pop()
        expected.append((start, end))
    assert trimmed_spans(text, bounds, pairs) == expected


def length_prefixed_digest(text: str, fingerprint: str, model: str) -> str:
    head = b"".join(b"%d:%s" % (len(part.encode()), part.encode()) for part in (fingerprint, model))
    return "c2:" + hashlib.sha256(head + text.encode("utf-8")).hexdigest()


def test_content_and_metadata_hashes_equal_their_formulations() -> None:
    rng = random.Random(3)
    for _ in range(500):
        text = "".join(rng.choice(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "😀", "\u2028", "a", "1:"]) for _ in range(rng.randint(0, 30)))
        fingerprint, model = rng.choice([("recursive:v1:{}", "hash-384"), ('q"x', "m\\n"), ("é:1", "ü")])
        document = Document.create(text, "s", metadata=rng.choice([{}, {"b": [1, 2.5, None, True], "a": text}]), tags=rng.choice([(), ("t",)]))
        assert content_hash(document, fingerprint, model) == length_prefixed_digest(text, fingerprint, model)
        assert legacy_content_hash(document, fingerprint, model) == json_digest([text, fingerprint, model])
        assert metadata_hash(document) == json_digest([document.metadata, list(document.tags)])


def test_content_hash_cannot_confuse_where_the_ids_end() -> None:
    document = Document.create("c", "s")
    assert content_hash(document, "ab", "c") != content_hash(document, "a", "bc")
    assert content_hash(Document.create("2:xy", "s"), "1:a", "z") != content_hash(Document.create("xy", "s"), "1:a", "2:z")


def test_same_content_reads_both_forms_of_stored_hash() -> None:
    document = Document.create("some text", "s")
    digest = content_hash(document, "f", "m")
    assert same_content(digest, document, "f", "m", digest)
    assert same_content(legacy_content_hash(document, "f", "m"), document, "f", "m", digest)
    assert not same_content(None, document, "f", "m", digest)
    assert not same_content(legacy_content_hash(document, "f", "other"), document, "f", "m", digest)
    assert not same_content(content_hash(document, "f", "other"), document, "f", "m", digest)
    # a "c2:" hash that differs is a changed document: never compared the first way
    assert not same_content("c2:" + legacy_content_hash(document, "f", "m"), document, "f", "m", digest)


@pytest.mark.parametrize(
    "path",
    ["a/b.md", "b.MD", ".bashrc", "name.", "a.tar.gz", "dir/", "dir/.", "a//b.txt", "/x/y/z.Txt", "", "..", "a/..", "ü/ß.md", "no_suffix"],
)
def test_file_names_and_suffixes_equal_pathlib(path: str) -> None:
    assert name_of(path) == Path(path).name
    assert suffix_of(path) == Path(path).suffix.lower()
    assert file_metadata(path) == {"file_name": Path(path).name}


def test_read_bytes_from_the_descriptor(tmp_path: Path) -> None:
    empty, exact, over = tmp_path / "empty.txt", tmp_path / "exact.txt", tmp_path / "over.txt"
    empty.write_bytes(b"")
    exact.write_bytes(b"x" * 100)
    over.write_bytes(b"x" * 101)
    assert read_bytes(str(empty), 100) == b""
    assert read_bytes(str(exact), 100) == b"x" * 100
    with pytest.raises(LoaderError, match="over the limit of 100"):
        read_bytes(str(over), 100)
    with pytest.raises(LoaderError, match="file not found"):
        read_bytes(str(tmp_path / "missing.txt"), 100)
    with pytest.raises(LoaderError, match="directory"):
        read_bytes(str(tmp_path), 100)
    big = tmp_path / "big.bin"
    payload = os.urandom(3 << 20)  # several reads' worth
    big.write_bytes(payload)
    assert read_bytes(str(big), 4 << 20) == payload

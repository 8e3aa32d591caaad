"""The shared chunker helpers (spans to chunks, trimming, containment, size checks) and the fixed chunker, value for value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from chunker_checks import MINILM_TOKENIZER, check_spans
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom import Document, Pipeline
from ragloom.chunkers import FixedChunker, FixedConfig, RecursiveConfig, SentenceConfig, fingerprint_of, spans_to_chunks
from ragloom.chunkers.base import check_separators, check_sizes, drop_contained, trim_span
from ragloom.stores.memory import MemoryStore
from ragloom.types import Chunk


def document() -> Document:
    return Document(id="doc", source="a/b.txt", text="Hello world. Second part here.", metadata={"lang": "en", "order": "theirs"}, tags=("t1",))


@pytest.mark.parametrize("extras", [None, [{"heading": "A"}, {"heading": "B"}]])
def test_spans_to_chunks_fills_every_field(extras: list[dict[str, str]] | None) -> None:
    doc = document()
    chunks = spans_to_chunks(doc, [(0, 12), (13, 30)], extras)
    assert all(type(c) is Chunk for c in chunks)
    assert [c.id for c in chunks] == ["doc:0", "doc:1"]
    assert [c.index for c in chunks] == [0, 1]
    assert [c.text for c in chunks] == ["Hello world.", "Second part here."]
    assert [(c.start, c.end) for c in chunks] == [(0, 12), (13, 30)]
    assert all(c.document_id == "doc" and c.source == "a/b.txt" and c.tags == ("t1",) for c in chunks)
    assert all(c.content_hash == "" and c.metadata_hash == "" for c in chunks)
    extra_keys = ["heading"] if extras else []
    for index, chunk in enumerate(chunks):
        # the document's metadata first, then the extras, then the locator keys (which win over the document's)
        assert list(chunk.metadata) == ["lang", "order", *extra_keys, "documentId", "source", "startOffset", "endOffset"]
        assert chunk.metadata["order"] == index and chunk.metadata["lang"] == "en"
        assert chunk.metadata["documentId"] == "doc" and chunk.metadata["source"] == "a/b.txt"
        assert (chunk.metadata["startOffset"], chunk.metadata["endOffset"]) == (chunk.start, chunk.end)
        if extras:
            assert chunk.metadata["heading"] == extras[index]["heading"]
    # each chunk owns its metadata: changing one leaves the other and the document alone
    chunks[0].metadata["lang"] = "changed"
    assert chunks[1].metadata["lang"] == "en" and doc.metadata["lang"] == "en"


def test_spans_to_chunks_of_no_spans() -> None:
    assert spans_to_chunks(document(), []) == []
    assert spans_to_chunks(document(), [], []) == []


@pytest.mark.parametrize(
    ("text", "start", "end", "expected"),
    [
        ("  ab  ", 0, 6, (2, 4)),
        ("ab", 0, 2, (0, 2)),
        ("    ", 0, 4, (4, 4)),
        (" a ", 1, 2, (1, 2)),
        ("x \t\n y", 1, 5, (5, 5)),
        ("x  y  z", 1, 6, (3, 4)),
    ],
)
def test_trim_span(text: str, start: int, end: int, expected: tuple[int, int]) -> None:
    assert trim_span(text, start, end) == expected


@pytest.mark.parametrize(
    ("spans", "expected"),
    [
        ([(0, 5), (5, 5), (3, 2)], [(0, 5)]),  # empty and inverted spans dropped
        ([(0, 5), (1, 4), (2, 5)], [(0, 5)]),  # inside the predecessor (also sharing its end)
        ([(0, 5), (0, 7)], [(0, 7)]),  # the same start, reaching further: replaces it
        ([(0, 5), (3, 8), (3, 9)], [(0, 5), (3, 9)]),
        ([(0, 5), (4, 9), (9, 12)], [(0, 5), (4, 9), (9, 12)]),
        ([(2, 4), (0, 4)], [(2, 4), (0, 4)]),  # starting before the predecessor: kept
        ([(0, 5), (0, 3)], [(0, 5)]),  # the same start, shorter: inside it, dropped
    ],
)
def test_drop_contained(spans: list[tuple[int, int]], expected: list[tuple[int, int]]) -> None:
    assert drop_contained(spans) == expected


def test_size_checks_name_the_option() -> None:
    check_sizes(10, 9)
    check_sizes(10, 0, "tokens", "tok.json")
    with pytest.raises(ValueError, match=r"'overlap' \(10\) must be smaller than 'size' \(10\)"):
        check_sizes(10, 10)
    with pytest.raises(ValueError) as refused:
        check_sizes(10, 0, "tokens")
    assert str(refused.value) == "size_unit = 'tokens' needs 'tokenizer' (a tokenizer.json path or 'tiktoken:NAME')"
    check_separators(("a", " "))
    with pytest.raises(ValueError) as refused:
        check_separators((" ", ""))
    assert str(refused.value) == "'separators' must not contain an empty string"
    with pytest.raises(ValueError, match="empty string"):
        RecursiveConfig(separators=("",))
    with pytest.raises(ValueError, match="tokenizer"):
        RecursiveConfig(size_unit="tokens")
    with pytest.raises(ValueError, match="overlap"):
        FixedConfig(size=5, overlap=5)
    with pytest.raises(ValueError, match="overlap"):
        SentenceConfig(size=5, overlap=6)


def test_fingerprints_name_every_option() -> None:
    assert fingerprint_of("x", None) == "x:v1:{}"
    assert fingerprint_of("x", {"not": "attrs"}, 3) == "x:v3:{}"
    assert fingerprint_of("fixed", FixedConfig(size=7, overlap=2)) == 'fixed:v1:{"overlap":2,"size":7}'
    assert FixedChunker(FixedConfig(size=7, overlap=2)).fingerprint == 'fixed:v1:{"overlap":2,"size":7}'
    assert FixedChunker().fingerprint == 'fixed:v1:{"overlap":0,"size":1000}'


@pytest.mark.parametrize(
    ("text", "size", "overlap", "expected"),
    [
        ("abcdefghij", 4, 0, ["abcd", "efgh", "ij"]),
        ("abcdefghij", 4, 2, ["abcd", "cdef", "efgh", "ghij"]),
        ("abcdefgh", 4, 0, ["abcd", "efgh"]),  # the last window ends exactly at the end: no empty one after it
        ("abcdefgh", 4, 1, ["abcd", "defg", "gh"]),
        ("ab  ", 2, 0, ["ab"]),
        ("  ab    cd", 4, 0, ["ab", "cd"]),
        ("abc", 5, 0, ["abc"]),
    ],
)
def test_fixed_windows(text: str, size: int, overlap: int, expected: list[str]) -> None:
    chunker = FixedChunker(FixedConfig(size=size, overlap=overlap))
    assert [text[a:b] for a, b in chunker.spans(text)] == expected
    chunks = chunker.chunk(Document(id="d", source="s", text=text))
    assert [c.text for c in chunks] == expected


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="ab \n", max_size=40), st.integers(1, 12).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1))))
def test_fixed_windows_step_by_size_minus_overlap(text: str, sizes: tuple[int, int]) -> None:
    size, overlap = sizes
    spans = FixedChunker(FixedConfig(size=size, overlap=overlap)).spans(text)
    check_spans(text, spans, size)
    # every span is a trimmed window starting at a multiple of the step
    step = size - overlap
    windows = [trim_span(text, s, min(s + size, len(text))) for s in range(0, max(len(text) - overlap, 1), step)]
    assert set(spans) <= set(windows)


@pytest.mark.parametrize("kind", ["recursive", "sentence"])
def test_a_relative_tokenizer_path_is_read_from_the_pipelines_folder(kind: str, tmp_path: Path) -> None:
    shutil.copy(MINILM_TOKENIZER, tmp_path / "tok.json")
    pipeline = Pipeline.builder().base_dir(tmp_path).store(MemoryStore()).embedder("hash", dim=16).chunker(kind, size=20, size_unit="tokens", tokenizer="tok.json").build()
    assert pipeline.chunker.fingerprint.startswith(f"{kind}:v1:") and ":tokenizer=sha256:" in pipeline.chunker.fingerprint


def test_both_chunk_builders_give_equal_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a Python cannot retype a filled layout to Chunk, Chunk(...) builds the same chunks."""
    from ragloom.chunkers import base

    doc, spans = document(), [(0, 12), (13, 30)]
    fast = spans_to_chunks(doc, spans)
    monkeypatch.setattr(base, "FAST_CHUNKS", False)
    slow = spans_to_chunks(doc, spans)
    assert slow == fast and [list(c.metadata) for c in slow] == [list(c.metadata) for c in fast]
    assert [c.metadata["order"] for c in slow] == [0, 1]

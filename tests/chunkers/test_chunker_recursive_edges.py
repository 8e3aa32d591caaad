"""The recursive chunker (the default) span for span against the plain-Python original, at the edges random text misses."""

from __future__ import annotations

import uuid

import pytest
import reference_recursive
from chunker_checks import MINILM_TOKENIZER, check_chunks, check_spans, covering
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom import Document
from ragloom.chunkers import RecursiveChunker, RecursiveConfig
from ragloom.chunkers.pieces import pack, split_ends, trimmed_spans


def same_as_reference(text: str, size: int, overlap: int = 0, separators: tuple[str, ...] = ("\n\n", "\n", ". ", " ")) -> list[tuple[int, int]]:
    spans = RecursiveChunker(RecursiveConfig(size=size, overlap=overlap, separators=separators)).spans(text)
    reference = reference_recursive.RecursiveChunker(reference_recursive.RecursiveConfig(size=size, overlap=overlap, separators=separators))
    assert spans == covering(reference.spans(text))
    check_spans(text, spans, size)
    return spans


@pytest.mark.parametrize(
    ("text", "size", "overlap"),
    [
        ("a\n\nbbbb cccc dddd", 6, 0),  # the coarsest separator right at offset 1
        ("a\n\nbbbb cccc dddd", 6, 2),
        ("x\nyyyy zzzz wwww", 5, 0),
        ("aaa bbbb\n\ncc dd ee ff", 10, 4),  # a paragraph of exactly size, then overlap
        ("aaaa bbbbb", 10, 3),  # the whole text exactly size
        ("aaaa bbbbbb", 10, 3),  # one over size
        ("one two three four five six seven", 9, 4),
        ("one. two. three. four. five.", 11, 5),
        (" " * 40 + "word " * 8 + " " * 40, 12, 5),  # whitespace runs longer than the trimming window
        ("word" + " " * 70 + "end", 30, 0),
        ("word" + " " * 70 + "end", 30, 10),
        ("\n" * 50 + "tail text here", 10, 0),
        ("head text here" + "\n" * 50, 10, 3),
        ("a" * 25, 7, 0),  # no separator at all: cut every size
        ("a" * 25, 7, 3),
        ("ab cd" * 10, 1, 0),
    ],
)
def test_spans_are_the_originals(text: str, size: int, overlap: int) -> None:
    same_as_reference(text, size, overlap)


@pytest.mark.parametrize("separators", [("§§",), ("<br>", "¶"), ("~", "=", "-"), ("zq",)])
def test_separators_never_used_before_cut_the_text(separators: tuple[str, ...]) -> None:
    text = "alpha§§beta<br>gamma¶delta~epsilon=zeta-eta zqtheta" * 3
    spans = same_as_reference(text, 9, 3, separators)
    # the first separator cuts: every chunk but the last ends with it or inside an over-long stretch
    assert len(spans) > 5


def test_a_whitespace_only_tail_longer_than_the_trimming_window_is_dropped() -> None:
    text = "word " + " " * 100
    assert RecursiveChunker(RecursiveConfig(size=20)).spans(text) == [(0, 4)]
    text = " " * 100 + " word"
    assert RecursiveChunker(RecursiveConfig(size=20)).spans(text) == [(101, 105)]


def test_trimmed_spans_over_long_whitespace() -> None:
    text = " " * 50 + "x" + " " * 50
    assert trimmed_spans(text, [0, len(text)], [(0, 1)]) == [(50, 51)]
    assert trimmed_spans(text, [0, 10, 60, len(text)], [(0, 1), (1, 2), (2, 3)]) == [(50, 51)]
    text = "a" + " " * 40 + "b"
    assert trimmed_spans(text, [0, 35, len(text)], [(0, 1), (1, 2)]) == [(0, 1), (41, 42)]
    assert trimmed_spans(text, [0, 1, 41, len(text)], [(0, 2), (1, 3)]) == [(0, 1), (41, 42)]


def test_pack_overlap_and_atoms() -> None:
    # five pieces of 3: chunks of two pieces, one piece carried over
    assert pack([0, 3, 6, 9, 12, 15], 6, 3) == [(0, 2), (1, 3), (2, 4), (3, 5)]
    assert pack([0, 3, 6, 9, 12, 15], 6, 0) == [(0, 2), (2, 4), (4, 5)]
    # a piece over size is taken alone
    assert pack([0, 10, 12], 5, 0) == [(0, 1), (1, 2)]
    assert pack([0], 5, 0) == []
    assert pack([0, 5], 5, 2) == [(0, 1)]
    # overlap leaves room for the next piece
    assert pack([0, 2, 4, 9], 7, 4) == [(0, 2), (1, 3)]
    assert pack([0, 2, 4, 10], 7, 4) == [(0, 2), (2, 3)]


def test_split_ends_pieces() -> None:
    out: list[int] = [0]
    split_ends("aaa bbb ccc", 0, 11, (" ",), 4, out)
    assert out == [0, 4, 8, 11]
    out = [2]
    split_ends("xxaaaa\n\nbb", 2, 10, ("\n\n", " "), 6, out)
    assert out == [2, 8, 10]
    out = [0]
    split_ends("abcdefghij", 0, 10, (), 4, out)
    assert out == [0, 4, 8, 10]
    out = [0]
    split_ends("abcd", 0, 4, (" ",), 4, out)
    assert out == [0, 4]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.sampled_from(["word", "x", " ", " " * 35, "\n", "\n\n", "\n" * 34, ". ", "§§", "ab"]), min_size=1, max_size=30).map("".join),
    st.integers(1, 40).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1))),
    st.sampled_from([("\n\n", "\n", ". ", " "), ("§§", " "), ("\n",), ()]),
)
def test_long_whitespace_runs_match_the_original(text: str, sizes: tuple[int, int], separators: tuple[str, ...]) -> None:
    size, overlap = sizes
    same_as_reference(text, size, overlap, separators)


def test_chunks_carry_the_document() -> None:
    text = "First paragraph here.\n\nSecond one, a bit longer than that.\n\nThird."
    chunker = RecursiveChunker(RecursiveConfig(size=30, overlap=8))
    chunks = check_chunks(chunker, text)
    # pieces are packed whole up to size; overlap carries whole trailing words (at most 8 characters)
    assert [c.text for c in chunks] == ["First paragraph here.\n\nSecond", "Second one, a bit longer than", "than that.\n\nThird."]
    assert RecursiveChunker(RecursiveConfig()).chunk(Document(id="d", source="s", text="")) == []
    assert chunker.fingerprint.startswith("recursive:v1:") and "tokenizer=" not in chunker.fingerprint
    assert '"size":30' in chunker.fingerprint and '"overlap":8' in chunker.fingerprint


def test_a_separator_first_seen_now_cuts_the_text() -> None:
    """Separators are compiled on first use (and cached): one this process has never seen cuts like any other."""
    fresh = f"<{uuid.uuid4().hex[:8]}>"
    text = fresh.join(["alpha beta", "gamma", "delta epsilon zeta"])
    spans = same_as_reference(text, 20, 0, (fresh, " "))
    assert [text[a:b] for a, b in spans][:2] == [f"alpha beta{fresh}", f"gamma{fresh}"]


def test_token_overlap_carries_whole_pieces_only() -> None:
    """A paragraph that fits in size tokens is one piece: the next chunk cannot start inside it."""
    text = "the cat sat down\n\nthe dog ran off"  # four tokens per paragraph
    chunker = RecursiveChunker(RecursiveConfig(size=4, overlap=2, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    assert [text[a:b] for a, b in chunker.spans(text)] == ["the cat sat down", "the dog ran off"]

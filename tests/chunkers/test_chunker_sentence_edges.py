"""Sentence boundaries at the edges the common cases miss: long prefixes, windows, word lengths, token sizes."""

from __future__ import annotations

import string

import pytest
from chunker_checks import MINILM_TOKENIZER, check_chunks, check_spans
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.chunkers import SentenceChunker, SentenceConfig
from ragloom.chunkers.sentences import sentence_ends, sentence_pieces
from ragloom.chunkers.tokens import TokenMeasure, load_token_starts


def pieces(text: str, start: int = 0, end: int | None = None) -> list[str]:
    bounds = [start, *sentence_ends(text, start, end)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def dotted(length: int) -> str:
    """A dotted word of ``length`` characters whose parts are all short letters ("ab.c.d...")."""
    letters = iter(string.ascii_lowercase * 4)
    word = ".".join(next(letters) for _ in range((length + 1) // 2))
    return word if len(word) == length else "x" + word


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an abbreviation far into the text: the word is found from the last space or line break before it
        ("x" * 50 + " Dr. Smith came. Next.", ["x" * 50 + " Dr. Smith came. ", "Next."]),
        (" Dr. Smith came. Next.", [" Dr. Smith came. ", "Next."]),
        ("A list\nof names\nDr. Smith came. Next.", ["A list\nof names\nDr. Smith came. ", "Next."]),
        ("Intro\nDr. Smith came. Next.", ["Intro\nDr. Smith came. ", "Next."]),
        # a line break after the abbreviation is not where its word starts
        ("Dr. Smith came.\nNext.", ["Dr. Smith came.\n", "Next."]),
        # a dotted abbreviation longer than eight characters is still one
        ("A.B.C.D.E. Smith came. Next.", ["A.B.C.D.E. Smith came. ", "Next."]),
        # a long word with digits (no seven letters before its period) ends the sentence
        ("Call 0800-123456. Then wait.", ["Call 0800-123456. ", "Then wait."]),
        # quotes and brackets before an abbreviation are not part of it
        ('They counted ("Approx. 5 of them") today. Next.', ['They counted ("Approx. 5 of them") today. ', "Next."]),
        ("[(“‘Sept. 5 was the day. Next.", ["[(“‘Sept. 5 was the day. ", "Next."]),
        # the general case (two spaces, closing marks) follows the same rules as the common one
        ("Hi.  there. Next one.", ["Hi.  there. ", "Next one."]),
        ("Hmm…  Next one. Last.", ["Hmm…  Next one. ", "Last."]),
        ("Dr.  Smith came. He left.", ["Dr.  Smith came. ", "He left."]),
        # a single line break is no end, and the scan goes on after it
        ("First line\nsecond line. Third.", ["First line\nsecond line. ", "Third."]),
        # a mark right where the previous sentence's whitespace ends
        ("Hi. 。Next", ["Hi. ", "。", "Next"]),
        ("\n\nHello", ["\n\n", "Hello"]),
        ("Heading\n\n", ["Heading\n\n"]),
        # a blank line inside the whitespace after a mark ends the sentence, and the scan goes on
        ("Hi!\n\nthere. Next.", ["Hi!\n\n", "there. ", "Next."]),
        # an initial X is an initial (no quote stripping eats it); a lone period is no abbreviation
        ("Ask X. Smith now. Next.", ["Ask X. Smith now. ", "Next."]),
        ("Wait . Next.", ["Wait . ", "Next."]),
        # dotted abbreviations have parts of up to three letters
        ("Dip.Ing. Smith came. Next.", ["Dip.Ing. Smith came. ", "Next."]),
        ("Dipl.Ing. Smith came. Next.", ["Dipl.Ing. ", "Smith came. ", "Next."]),
    ],
)
def test_sentence_pieces_at_the_edges(text: str, expected: list[str]) -> None:
    assert pieces(text) == expected


def test_sentence_ends_default_to_the_whole_text() -> None:
    assert sentence_ends("\n\nHello") == [2, 7]
    assert sentence_ends("Heading\n\n") == [9]
    assert sentence_ends("! Hi") == [2, 4]  # a mark at offset 0 ends a sentence too


@pytest.mark.parametrize("prefix", ["", "See "])
def test_a_dotted_word_of_over_40_characters_is_no_abbreviation(prefix: str) -> None:
    forty, forty_one = dotted(40), dotted(41)
    assert len(forty) == 40 and len(forty_one) == 41
    assert pieces(f"{prefix}{forty}. Smith came. Next.") == [f"{prefix}{forty}. Smith came. ", "Next."]
    assert pieces(f"{prefix}{forty_one}. Smith came. Next.") == [f"{prefix}{forty_one}. ", "Smith came. ", "Next."]
    # the same after a line break as after a space
    assert pieces(f"Hi\n{forty}. Smith came.") == [f"Hi\n{forty}. Smith came."]
    assert pieces(f"Hi\n{forty_one}. Smith came.") == [f"Hi\n{forty_one}. ", "Smith came."]


def test_a_window_ignores_marks_after_its_end() -> None:
    text = "一二。三四。"
    assert sentence_ends(text, 0, 1) == [1]
    assert sentence_ends(text, 0, 3) == [3]
    assert sentence_ends("Hello world。Next。", 0, 3) == [3]
    assert sentence_ends("Hello world。Next。", 2, 8) == [8]


def test_sentence_pieces_of_a_window() -> None:
    text = "One. Two. Three."
    assert sentence_pieces(text, 0, 9, 100, None) == [0, 5, 9]
    assert sentence_pieces(text, 5, 16, 100, None) == [5, 10, 16]
    # a sentence over size inside the window is cut at spaces, the window's end kept
    assert sentence_pieces(text, 0, 9, 4, None) == [0, 4, 5, 9]


def test_sentence_pieces_in_tokens_cut_a_sentence_by_its_token_count() -> None:
    text = "😀😀. Hi."
    # four tokens start at each emoji (a byte-level tokenizer), one at every other character
    starts = [0, 0, 0, 0, 1, 1, 1, 1, *range(2, len(text))]
    tokens = TokenMeasure(starts, len(text), text=text)
    bounds = sentence_pieces(text, 0, len(text), 5, tokens)
    assert bounds[0] == 0 and bounds[-1] == len(text) and bounds == sorted(set(bounds))
    assert bounds != [0, 4, len(text)], "the first sentence has 10 tokens: it must be cut"
    for a, b in zip(bounds, bounds[1:], strict=False):
        assert tokens.measure(a, b) <= 5 or b - a == 1, (a, b, tokens.measure(a, b))


def minilm():  # type: ignore[no-untyped-def]
    return load_token_starts(str(MINILM_TOKENIZER))[0]


def test_token_sized_chunks_keep_sentences_that_fit_in_tokens_whole() -> None:
    # each sentence has fewer than 20 tokens but more than 20 characters: whole sentences, one per chunk
    sentences = ["The lamp glows softly tonight. ", "Rivers run down to the sea again. ", "Birds sing in the old oak tree. "]
    text = "".join(sentences)
    chunker = SentenceChunker(SentenceConfig(size=12, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    assert [c.text for c in check_chunks(chunker, text)] == [s.strip() for s in sentences]


def test_token_sized_chunks_cut_a_sentence_longer_than_size_tokens() -> None:
    long = "word " * 30 + "and https://example.com/averyveryverylongpathsegmentwithoutanyseparators/andmore end."
    text = f"Short one. {long} After."
    size = 8
    chunker = SentenceChunker(SentenceConfig(size=size, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    measure = TokenMeasure(minilm()(text), len(text)).measure
    spans = chunker.spans(text)
    check_spans(text, spans, size, measure=measure)
    assert text[spans[0][0] : spans[0][1]].startswith("Short one. word")
    assert text[spans[-1][0] : spans[-1][1]].endswith("end. After.")
    assert len(spans) > 6


def test_tokens_without_a_tokenizer_are_refused() -> None:
    with pytest.raises(ValueError, match="tokenizer"):
        SentenceConfig(size_unit="tokens")
    with pytest.raises(ValueError, match="overlap"):
        SentenceConfig(size=10, overlap=10)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["Dr. ", "Smith ", "x" * 45 + " ", "came. ", "\n\n", "\n", "U.S. ", "…  ", ".. ", "。", "Hi!  ", "e.g. ", "a "]), max_size=25).map("".join),
    st.integers(0, 30),
    st.integers(0, 30),
)
def test_a_window_is_the_same_as_the_text_cut_to_it(text: str, a: int, b: int) -> None:
    """Sentence ends of ``text[start:end]`` never look past ``end``, cover the window and stay inside it."""
    start, end = min(a, b, len(text)), min(max(a, b), len(text))
    if start == end:
        return
    ends = sentence_ends(text, start, end)
    assert ends[-1] == end and all(start < e <= end for e in ends) and ends == sorted(set(ends))
    assert ends == sentence_ends(text[:end], start, end)

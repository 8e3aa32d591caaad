"""Sentence boundaries: abbreviations, decimals, ellipses and quotes; long-sentence fallback."""

from __future__ import annotations

import pytest
from chunker_checks import check_spans

from ragloom import Document
from ragloom.chunkers import SentenceChunker, SentenceConfig
from ragloom.chunkers.sentences import sentence_ends


def sentences(text: str) -> list[str]:
    ends = sentence_ends(text)
    return [text[a:b].strip() for a, b in zip([0, *ends], ends, strict=False)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One. Two! Three? Four", ["One.", "Two!", "Three?", "Four"]),
        ("Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
        ("Use tools, e.g. Python and i.e. Rust. Next one.", ["Use tools, e.g. Python and i.e. Rust.", "Next one."]),
        ("The U.S. Army arrived. It left.", ["The U.S. Army arrived.", "It left."]),
        ("It costs 3.14 dollars. Cheap.", ["It costs 3.14 dollars.", "Cheap."]),
        ("Wait... What happened? Nothing… Really.", ["Wait... What happened?", "Nothing… Really."]),
        ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
        ('"Stop!" he said. Then silence.', ['"Stop!" he said.', "Then silence."]),
        ("See Fig. 3 for details. Done.", ["See Fig. 3 for details.", "Done."]),
        ("Written by J. R. Tolkien. A classic.", ["Written by J. R. Tolkien.", "A classic."]),
        ("A heading\n\nA paragraph without end\n\nLast", ["A heading", "A paragraph without end", "Last"]),
        ("第一句。第二句！第三句", ["第一句。", "第二句！", "第三句"]),
        ("lower. case continues the sentence.", ["lower. case continues the sentence."]),
    ],
)
def test_sentence_boundaries(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


def test_packs_whole_sentences_up_to_size() -> None:
    text = "Alpha beta gamma. Delta epsilon. Zeta eta theta iota. Kappa."
    chunker = SentenceChunker(SentenceConfig(size=35))
    assert [text[a:b] for a, b in chunker.spans(text)] == ["Alpha beta gamma. Delta epsilon.", "Zeta eta theta iota. Kappa."]


def test_overlap_carries_whole_trailing_sentences() -> None:
    text = "One one. Two two. Three three. Four four. Five five."
    spans = SentenceChunker(SentenceConfig(size=30, overlap=12)).spans(text)
    chunks = [text[a:b] for a, b in spans]
    # "Three three. " (13 characters) is longer than the overlap, so the third chunk starts after it
    assert chunks == ["One one. Two two.", "Two two. Three three.", "Four four. Five five."]
    check_spans(text, spans, 30)


def test_a_sentence_longer_than_size_falls_back_to_recursive_splitting() -> None:
    long = "word " * 40 + "end."
    text = f"Short one. {long} After."
    spans = SentenceChunker(SentenceConfig(size=50)).spans(text)
    check_spans(text, spans, 50)
    assert text[spans[0][0] : spans[0][1]].startswith("Short one.")
    assert all(not text[a:b].startswith("ord") for a, b in spans), "cuts fall on spaces, not inside words"
    assert text[spans[-1][0] : spans[-1][1]].endswith("After.")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A heading\n\nthe body starts lower-case", ["A heading", "the body starts lower-case"]),
        ("A heading\n  \t\n  indented body", ["A heading", "indented body"]),
        ("Ends here.\n\nlower-case paragraph", ["Ends here.", "lower-case paragraph"]),
        ("Ends here.\n \nlower-case paragraph", ["Ends here.", "lower-case paragraph"]),
        ("e.g.\n\nnext item", ["e.g.", "next item"]),
        ("Überschrift\n\nder Text folgt", ["Überschrift", "der Text folgt"]),
        ("- item one\n\n- item two\n\n- item three", ["- item one", "- item two", "- item three"]),
        ("one line\nnext line continues", ["one line\nnext line continues"]),
    ],
)
def test_a_blank_line_ends_a_sentence(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected
    ends = sentence_ends(text)
    assert ends[-1] == len(text) and ends == sorted(set(ends))


def test_the_sentence_chunker_cuts_at_blank_lines() -> None:
    text = "Title without a period\n\nfirst paragraph has no period either\n\nsecond one neither"
    chunks = SentenceChunker(SentenceConfig(size=40)).chunk(Document(id="d", source="s.md", text=text))
    texts = [c.text.strip() for c in chunks]
    assert texts == ["Title without a period", "first paragraph has no period either", "second one neither"]


def pieces(text: str, start: int = 0, end: int | None = None) -> list[str]:
    """The sentences with their trailing whitespace, as the chunkers cut them."""
    ends = sentence_ends(text, start, end)
    return [text[a:b] for a, b in zip([start, *ends], ends, strict=False)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Example. Next one.", ["Example. ", "Next one."]),  # seven letters: no abbreviation
        ("Abcdef. Next.", ["Abcdef. ", "Next."]),
        ("Very long plainword. Next", ["Very long plainword. ", "Next"]),
        ("Meet (Dr. Who) now. Yes.", ["Meet (Dr. Who) now. ", "Yes."]),
        ("What?! Yes. No.", ["What?! ", "Yes. ", "No."]),
        ("Hi.  Two spaces. Next", ["Hi.  ", "Two spaces. ", "Next"]),
        ("End.\nNext line.", ["End.\n", "Next line."]),
        ("Hmm… Next one.", ["Hmm… Next one."]),  # an ellipsis does not end a sentence
        ("Wait.. Next one.", ["Wait.. Next one."]),
        ("Bring pens etc. And paper.", ["Bring pens etc. And paper."]),
        ("Ça va. Oui. Non.", ["Ça va. ", "Oui. ", "Non."]),  # not ASCII: the same rules
        ("He left.) Then came.", ["He left.) ", "Then came."]),
        ('Stop." Go.', ['Stop." ', "Go."]),
        ("(See p. 4.) Next.", ["(See p. 4.) ", "Next."]),
        ("See Ph.D. Holders. Ok.", ["See Ph.D. Holders. ", "Ok."]),
        ("U.S.A. Today. Yes.", ["U.S.A. Today. ", "Yes."]),
        ("Abcd.efgh. Next.", ["Abcd.efgh. ", "Next."]),  # a dotted word with a part of four letters is no abbreviation
        ("Numbers 1.5. Next.", ["Numbers 1.5. ", "Next."]),
        ("x. Y.", ["x. Y."]),  # an initial
        ("A.  B.", ["A.  B."]),
        ("Dr.  Smith came.", ["Dr.  Smith came."]),
        ("「はい。」次。", ["「はい。」", "次。"]),
        ("Hi!\n\nthere", ["Hi!\n\n", "there"]),
        ("First.   \n\n  second", ["First.   \n\n  ", "second"]),
        ("  Leading. Two.", ["  Leading. ", "Two."]),
        ("Hi. ", ["Hi. "]),
        ("Trailing blank line.\n\n", ["Trailing blank line.\n\n"]),
    ],
)
def test_sentence_pieces_keep_their_whitespace(text: str, expected: list[str]) -> None:
    assert pieces(text) == expected
    assert "".join(pieces(text)) == text


def test_sentence_ends_within_a_window_of_the_text() -> None:
    text = "Skip this. Keep one. Keep two. Tail here."
    assert sentence_ends(text, 11, 31) == [21, 31]
    assert pieces(text, 11, 31) == ["Keep one. ", "Keep two. "]
    assert sentence_ends(text, 11) == [21, 31, len(text)]
    assert sentence_ends(text, 0, 10) == [10]  # a window ending at a mark: one sentence
    assert sentence_ends("One.\n\nTwo.\n\nThree.", 6) == [12, 18]
    assert sentence_ends("一。二。三。", 2) == [4, 6]

"""Token sizes cut at the coarsest separator a stretch holds, then the next finer one, never skipping a level."""

from __future__ import annotations

from chunker_checks import MINILM_TOKENIZER, check_chunks

from ragloom.chunkers import RecursiveChunker, RecursiveConfig

LINES = ["Alpha beta gamma. Delta epsilon zeta.", "Eta theta iota. Kappa lambda mu.", "Nu xi omicron. Pi rho sigma.", "Tau upsilon phi. Chi psi omega."]


def _chunks(text: str, size: int) -> list[str]:
    chunker = RecursiveChunker(RecursiveConfig(size=size, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    return [c.text for c in check_chunks(chunker, text)]


def test_a_paragraph_over_size_is_cut_at_its_lines_before_its_sentences() -> None:
    """Two lines do not fit in 18 tokens, a line and the next line's first sentence would: the cut is at the line."""
    text = "Intro.\n\n" + "\n".join(LINES) + "\n"
    assert _chunks(text, 18) == ["Intro.\n\n" + LINES[0], *LINES[1:]]


def test_words_of_several_tokens_stay_whole_when_no_coarser_separator_is_there() -> None:
    """No paragraph, line or sentence break: the spaces cut, never a token start inside a word."""
    words = "supercalifragilistic unbelievably antidisestablishmentarianism pneumonoultramicroscopic xylophonist "
    text = words * 3
    chunks = _chunks(text, 12)
    vocabulary = set(words.split())
    assert all(set(chunk.split()) <= vocabulary for chunk in chunks), chunks
    assert " ".join(chunks).split() == text.split()


def test_a_paragraph_break_right_after_the_first_character_still_cuts_first() -> None:
    """The coarsest separator found at offset 1 is a separator like any other: paragraphs stay whole."""
    first, second = "\n".join(LINES[:2]), "\n".join(LINES[2:])
    text = f"A\n\n{first}\n\n{second}"
    assert _chunks(text, 30) == [f"A\n\n{first}", second]

"""Token sizes: a line over size is cut at its own sentences, never at a sentence break of the lines after it."""

from __future__ import annotations

from chunker_checks import MINILM_TOKENIZER, check_chunks

from ragloom.chunkers import RecursiveChunker, RecursiveConfig


def _spans(text: str, size: int) -> list[tuple[int, int, str]]:
    chunker = RecursiveChunker(RecursiveConfig(size=size, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    return [(c.start, c.end, c.text) for c in check_chunks(chunker, text)]


def test_a_line_over_size_is_cut_at_its_own_sentence_breaks_only() -> None:
    """The first line (two sentences) is over 8 tokens and is cut at its ". "; its last sentence ends at the line break,
    not at the ". " of the next line (a search for the separator past the line's end would join "Mu" to it)."""
    text = "Alpha beta gamma delta epsilon. Zeta eta theta iota kappa lambda.\nMu nu. Xi omicron.\nPi rho. Sigma tau."
    assert _spans(text, 8) == [
        (0, 31, "Alpha beta gamma delta epsilon."),
        (32, 65, "Zeta eta theta iota kappa lambda."),
        (66, 84, "Mu nu. Xi omicron."),
        (85, 103, "Pi rho. Sigma tau."),
    ]

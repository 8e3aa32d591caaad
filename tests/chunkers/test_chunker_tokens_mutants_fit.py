"""Last-resort token cuts of a range that starts inside a word: every part re-tokenized on its own fits the size.

A part that starts inside a word can take more tokens on its own than the document gave it (WordPiece loses its
``##`` prefixes there), so the cuts go on until the rest fits on its own, not only by the document's count; and the
first token of the document is a cut like any other, also when the range starts before it.
"""

from __future__ import annotations

from pathlib import Path

from chunker_checks import MINILM_TOKENIZER
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

from ragloom.chunkers.tokens import TokenMeasure, load_token_starts

STARTS = load_token_starts(str(MINILM_TOKENIZER))[0]


def _parts_fit_alone(tokens: TokenMeasure, start: int, cuts: list[int], size: int) -> bool:
    bounds = [start, *cuts]
    return all(tokens.alone(a, b) <= size for a, b in zip(bounds, bounds[1:], strict=False))


def test_the_rest_of_a_word_is_cut_until_it_fits_on_its_own() -> None:
    """ "antidisestablishmentarianism" is anti ##dis ##est ##ab ...; from its second letter to its tenth the document
    counts two tokens (##dis at 4, ##est at 7), but "ntidisest" alone is four (nt ##idi ##ses ##t): cut at 4, where
    the rest fits by count, and "disest" alone is still three (di ##ses ##t), so cut again at 7."""
    text = "antidisestablishmentarianism"
    tokens = TokenMeasure(STARTS(text), len(text), text=text, tokenize=STARTS)
    assert tokens.starts[:4] == [0, 4, 7, 10]
    assert tokens.measure(1, 10) == 2
    assert tokens.alone(1, 10) == 4
    assert tokens.alone(4, 10) == 3
    cuts = tokens.hard_cuts(1, 10, 2)
    assert cuts == [4, 7, 10]
    assert _parts_fit_alone(tokens, 1, cuts, 2)


def test_a_long_range_from_inside_a_word_is_cut_into_parts_that_each_fit_alone() -> None:
    text = "unbelievably antidisestablishmentarianism internationalization"
    tokens = TokenMeasure(STARTS(text), len(text), text=text, tokenize=STARTS)
    for start, end, size in [(14, 23, 2), (34, 52, 2), (26, 52, 4)]:
        cuts = tokens.hard_cuts(start, end, size)
        assert cuts[-1] == end
        assert _parts_fit_alone(tokens, start, cuts, size), (start, end, size, cuts)
    assert tokens.hard_cuts(34, 52, 2) == [38, 42, 52]
    assert tokens.hard_cuts(26, 52, 4) == [38, 42, 52]


def _zz_dropping_tokenizer(directory: Path) -> str:
    """A real tokenizer.json: one token per letter, and a normalizer that deletes every "zz" (no token comes from it)."""
    vocab = {"[UNK]": 0, **{c: i + 1 for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Replace("zz", "")
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    path = directory / "tokenizer.json"
    tokenizer.save(str(path))
    return str(path)


def test_a_range_starting_before_the_first_token_is_cut_at_that_token(tmp_path: Path) -> None:
    """In "zzab" the tokenizer drops "zz": the document's tokens start at 2 (a) and 3 (b). From offset 1 (inside the
    word) with size 1, "za" alone is two tokens (z, a): the cut moves back to the document's first token, 2, even
    though no token starts before it, and every part then fits alone."""
    starts = load_token_starts(_zz_dropping_tokenizer(tmp_path))[0]
    text = "zzab"
    assert starts(text) == [2, 3]
    assert starts("za") == [0, 1]
    tokens = TokenMeasure(starts(text), len(text), text=text, tokenize=starts)
    assert tokens.alone(1, 3) == 2
    cuts = tokens.hard_cuts(1, 4, 1)
    assert cuts == [2, 3, 4]
    assert _parts_fit_alone(tokens, 1, cuts, 1)

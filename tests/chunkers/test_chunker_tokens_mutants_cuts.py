"""Last-resort token cuts end exactly once (also when the last part is one token over size alone); the empty-spec message."""

from __future__ import annotations

import pytest
from chunker_checks import MINILM_TOKENIZER

from ragloom.chunkers.tokens import TokenMeasure, load_token_starts
from ragloom.errors import ConfigError

STARTS = load_token_starts(str(MINILM_TOKENIZER))[0]


def test_hard_cuts_of_long_words_are_greedy_and_end_once() -> None:
    """ "unbelievably" is un ##bel ##ie ##va ##bly; cut one token at a time, the last part "bly" re-tokenizes into two
    tokens on its own (over size 1) but is a single token of the document: nothing smaller to cut, it stays whole."""
    text = "unbelievably"
    tokens = TokenMeasure(STARTS(text), len(text), text=text, tokenize=STARTS)
    assert tokens.starts == [0, 2, 5, 7, 9]
    assert tokens.alone(9, 12) == 2
    assert tokens.hard_cuts(0, 12, 1) == [2, 5, 7, 9, 12]
    # each part as long as fits: "unbel" is 2 tokens; "ieva" alone fits in 2, so the cut is not moved back further
    assert tokens.hard_cuts(0, 12, 2) == [5, 9, 12]
    text = "antidisestablishmentarianism"
    tokens = TokenMeasure(STARTS(text), len(text), text=text, tokenize=STARTS)
    assert tokens.hard_cuts(0, len(text), 1) == [4, 7, 10, 12, 16, 20, 25, 28]
    assert tokens.hard_cuts(0, len(text), 3) == [10, 20, 28]


def test_an_empty_tokenizer_spec_is_refused_with_the_whole_message() -> None:
    with pytest.raises(ConfigError) as refused:
        load_token_starts("")
    assert str(refused.value) == "size_unit = 'tokens' needs a 'tokenizer' (a tokenizer.json path or 'tiktoken:NAME')"

"""Token coordinates of a document (``TokenMeasure``) and loading a tokenizer (``load_token_starts``).

A span's size is the number of the document's tokens that start inside it; a
cut falls on a token start; a part that starts inside a word is re-tokenized
on its own (WordPiece loses its ``##`` prefixes there) and never exceeds the size.
"""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest
from chunker_checks import MINILM_TOKENIZER
from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.chunkers import RecursiveChunker, RecursiveConfig
from ragloom.chunkers.tokens import TokenMeasure, load_token_starts
from ragloom.errors import ConfigError, PluginError

STARTS = load_token_starts(str(MINILM_TOKENIZER))[0]


def _measure(text: str) -> TokenMeasure:
    return TokenMeasure(STARTS(text), len(text), text=text, tokenize=STARTS)


def test_coordinates_count_the_tokens_starting_before_an_offset() -> None:
    # two tokens start at offset 3 (one character split into two tokens)
    tokens = TokenMeasure([0, 3, 3, 7], 10)
    assert [tokens.coord(o) for o in (0, 1, 3, 4, 7, 8, 10)] == [0, 1, 1, 3, 3, 4, 4]
    assert tokens.measure(0, 10) == 4
    assert tokens.measure(3, 7) == 2
    assert tokens.measure(4, 7) == 0
    assert tokens.measure(3, 4) == 2
    assert tokens.measure(7, 8) == 1


@st.composite
def _starts_and_range(draw: st.DrawFn) -> tuple[list[int], int, int, int]:
    length = draw(st.integers(1, 60))
    starts = sorted(draw(st.lists(st.integers(0, length - 1), min_size=1, max_size=80)))
    start = draw(st.integers(0, length - 1))
    end = draw(st.integers(start + 1, length))
    return starts, start, end, draw(st.integers(1, 8))


@settings(deadline=None, max_examples=150)
@given(_starts_and_range())
def test_hard_cuts_without_a_tokenizer_are_greedy_cuts_at_token_starts(case: tuple[list[int], int, int, int]) -> None:
    """Each part takes as many tokens as fit; only tokens sharing one start character (an atom) make a part larger."""
    starts, start, end, size = case
    tokens = TokenMeasure(starts, end)
    cuts = tokens.hard_cuts(start, end, size)
    assert cuts[-1] == end
    bounds = [start, *cuts]
    assert all(a < b for a, b in zip(bounds, bounds[1:], strict=False)), cuts
    assert all(c in starts for c in cuts[:-1]), "inner cuts fall on token starts"
    for a, b in zip(bounds, bounds[1:], strict=False):
        inside = {s for s in starts if a <= s < b}
        assert tokens.measure(a, b) <= size or len(inside) == 1, (a, b)
    for a, b in zip(bounds, bounds[1:-1], strict=False):
        assert tokens.measure(a, b + 1) > size, f"the part {a}..{b} could have taken the tokens starting at {b}"


def test_hard_cuts_on_hand_checked_starts() -> None:
    assert TokenMeasure(list(range(10)), 10).hard_cuts(0, 10, 3) == [3, 6, 9, 10]
    assert TokenMeasure(list(range(10)), 10).hard_cuts(2, 10, 4) == [6, 10]
    assert TokenMeasure(list(range(10)), 10).hard_cuts(0, 10, 10) == [10]
    # four tokens start at offset 0: that character is one part of its own, over size
    assert TokenMeasure([0, 0, 0, 0, 5], 6).hard_cuts(0, 6, 2) == [5, 6]
    # the whole range is one character's tokens: nothing to cut
    assert TokenMeasure([0, 0, 0], 1).hard_cuts(0, 1, 2) == [1]


def test_a_cut_never_splits_a_word_between_two_characters_of_one_token() -> None:
    tokens = _measure("ab cd")
    assert [tokens.inside_word(o) for o in range(6)] == [False, True, False, False, True, False]
    assert not TokenMeasure([0, 3], 5).inside_word(1), "without the text nothing is inside a word"
    assert _measure("a-b").inside_word(1) is False
    assert _measure("é1").inside_word(1) is True


def test_a_part_starting_inside_a_word_counts_its_tokens_alone() -> None:
    text = "the supercalifragilistic overcomplicated thing"
    tokens = _measure(text)
    start = text.index("upercali")
    alone = len(STARTS(text[start : len(text)]))
    assert alone > tokens.measure(start, len(text)), "the fixture must re-tokenize into more pieces"
    assert tokens.alone(start, len(text)) == alone
    assert tokens.alone(0, len(text)) == tokens.measure(0, len(text)), "a part at a word start keeps the document's count"
    space = text.index(" over")
    assert tokens.inside_word(start) and not tokens.inside_word(space)
    assert tokens.alone(space, len(text)) == tokens.measure(space, len(text))
    # coords: cumulative, the first at the document's coordinate of the first bound
    bounds = [4, start, len(text)]
    assert tokens.coords(bounds) == [1, 1 + tokens.measure(4, start), 1 + tokens.measure(4, start) + alone]
    assert tokens.coords([]) == []
    assert TokenMeasure([0, 2, 4], 6).coords([2, 4, 6]) == [1, 2, 3]


@settings(deadline=None, max_examples=40)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzéü ", min_size=1, max_size=120), st.integers(1, 6), st.data())
def test_hard_cuts_with_a_tokenizer_fit_each_part_re_tokenized(text: str, size: int, data: st.DataObject) -> None:
    tokens = _measure(text)
    start = data.draw(st.integers(0, len(text) - 1))
    cuts = tokens.hard_cuts(start, len(text), size)
    bounds = [start, *cuts]
    assert cuts[-1] == len(text)
    assert all(a < b for a, b in zip(bounds, bounds[1:], strict=False))
    for a, b in zip(bounds, bounds[1:], strict=False):
        part = text[a:b]
        if len({s for s in tokens.starts if a <= s < b}) > 1:  # more than one token: the part is cut to fit
            assert tokens.alone(a, b) <= size, (a, b, part)
            assert len(STARTS(part)) <= size, (a, b, part)


def test_a_long_word_cut_in_tokens_re_tokenizes_within_size() -> None:
    text = "start " + "pneumonoultramicroscopicsilicovolcanoconiosis" * 3 + " end"
    tokens = _measure(text)
    for size in (2, 3, 5):
        cuts = tokens.hard_cuts(0, len(text), size)
        for a, b in zip([0, *cuts], cuts, strict=False):
            assert len(STARTS(text[a:b])) <= size, (size, text[a:b])
            assert tokens.measure(a, b) >= 1


def test_the_tokenizer_digest_is_the_file_content_hash(tmp_path: Path) -> None:
    data = MINILM_TOKENIZER.read_bytes()
    starts, digest = load_token_starts(str(MINILM_TOKENIZER))
    assert digest == "sha256:" + hashlib.sha256(data).hexdigest()[:16]
    assert starts("Hello world") == [0, 6]
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "tok.json").write_bytes(data)
    relative, same = load_token_starts("sub/tok.json", tmp_path)
    assert same == digest and relative("Hello world") == [0, 6]
    chunker = RecursiveChunker(RecursiveConfig(size_unit="tokens", tokenizer="sub/tok.json"), base_dir=tmp_path)
    assert chunker.fingerprint.endswith(f":tokenizer={digest}")


def test_token_starts_are_sorted_character_offsets_without_special_tokens() -> None:
    text = "Ünïcödé façade 😀 naïve."
    starts = STARTS(text)
    assert starts == sorted(starts)
    assert all(0 <= s < len(text) for s in starts)
    assert 0 in starts and text.index("😀") in starts
    long = "word " * 2000  # past the model's 512-token window: nothing truncated
    assert len(STARTS(long)) == 2000


def test_a_tokenizer_that_cannot_be_loaded_is_a_config_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"needs a 'tokenizer' \(a tokenizer.json path or 'tiktoken:NAME'\)"):
        load_token_starts("")
    with pytest.raises(ConfigError, match=r"cannot read tokenizer file '.*missing\.json': No such file"):
        load_token_starts("missing.json", tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"^cannot load tokenizer file '.*bad\.json': "):
        load_token_starts(str(bad))


def test_a_tokenizer_path_with_a_tilde_is_the_home_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "tok.json").write_bytes(MINILM_TOKENIZER.read_bytes())
    starts, _ = load_token_starts("~/tok.json", Path("/nonexistent"))
    assert starts("Hello world") == [0, 6]


def test_a_missing_tokenizer_package_is_a_plugin_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # the package not installed
    with pytest.raises(PluginError, match=r"^size_unit = 'tokens' with a tokenizer.json needs the 'tokenizers' package: pip install tokenizers$"):
        load_token_starts(str(MINILM_TOKENIZER))
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    with pytest.raises(PluginError, match=r"^tokenizer 'tiktoken:\.\.\.' needs the 'tiktoken' package: pip install tiktoken$"):
        load_token_starts("tiktoken:cl100k_base")


def test_a_tiktoken_encoding_that_cannot_load_is_a_config_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fault: tiktoken is there but its encoding files are not (offline); the name after the first colon is asked for."""
    offline = types.ModuleType("tiktoken")

    def get_encoding(name: str) -> None:
        raise ValueError(f"no files for {name} offline")

    offline.get_encoding = get_encoding  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tiktoken", offline)
    with pytest.raises(ConfigError, match=r"^cannot load tiktoken encoding 'cl100k_base': no files for cl100k_base offline$"):
        load_token_starts("tiktoken:cl100k_base")
    with pytest.raises(ConfigError, match=r"^cannot load tiktoken encoding 'my:enc': no files for my:enc offline$"):
        load_token_starts("tiktoken:my:enc")

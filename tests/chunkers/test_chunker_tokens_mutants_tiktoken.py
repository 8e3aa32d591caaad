"""Token sizing with a real tiktoken encoding, offline, and tokenizer paths relative to the working folder.

The encoding is the tiny byte-level BPE of ``fixtures/tiktoken_plugin`` (every
byte plus a few merges and one special token), found by tiktoken itself through
its ``tiktoken_ext`` plugin namespace: ``tokenizer = "tiktoken:ragloom-test-bpe"``
runs tiktoken's own encoder and offsets with no encoding files to download.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import tiktoken
from chunker_checks import FIXTURES, MINILM_TOKENIZER

from ragloom.chunkers import RecursiveChunker, RecursiveConfig
from ragloom.chunkers.tokens import load_token_starts
from ragloom.errors import ConfigError
from ragloom.types import Document

ENCODING = "ragloom-test-bpe"


@pytest.fixture
def encoding(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """The test encoding made findable by tiktoken's plugin discovery (its caches reset around the test)."""
    import tiktoken.registry as registry

    monkeypatch.syspath_prepend(str(FIXTURES / "tiktoken_plugin"))
    for name in [m for m in sys.modules if m == "tiktoken_ext" or m.startswith("tiktoken_ext.")]:
        monkeypatch.delitem(sys.modules, name)  # the namespace package's path read again with the plugin folder
    import tiktoken_ext

    monkeypatch.setattr(registry, "tiktoken_ext", tiktoken_ext)
    monkeypatch.setattr(registry, "ENCODING_CONSTRUCTORS", None)
    registry._available_plugin_modules.cache_clear()
    yield tiktoken.get_encoding(ENCODING)
    registry._available_plugin_modules.cache_clear()
    registry.ENCODINGS.pop(ENCODING, None)


def test_tiktoken_starts_are_the_character_offsets_of_each_token(encoding: object) -> None:
    starts, digest = load_token_starts(f"tiktoken:{ENCODING}")
    assert digest == "tiktoken:ragloom-test-bpe"
    # tokens: "the" " " "lower" " th" "ing"
    assert starts("the lower thing") == [0, 3, 4, 9, 12]
    # a two-byte character is two tokens that start at the same character
    assert starts("é!") == [0, 0, 1]
    assert starts("") == []


def test_text_spelling_a_special_token_is_counted_as_plain_text(encoding: object) -> None:
    """A document may contain "<|endoftext|>": it is measured as its bytes, never refused nor one special token."""
    starts, _ = load_token_starts(f"tiktoken:{ENCODING}")
    text = "a<|endoftext|>b"
    assert starts(text) == list(range(len(text)))  # no merge applies: one token per byte, one byte per character


def test_text_tiktoken_cannot_round_trip_is_a_config_error_naming_the_encoding(encoding: object) -> None:
    """A lone surrogate is not UTF-8: tiktoken encodes it as U+FFFD, so offsets into the original would be wrong."""
    starts, _ = load_token_starts(f"tiktoken:{ENCODING}")
    with pytest.raises(ConfigError) as refused:
        starts("a\ud800b")
    assert str(refused.value) == "tiktoken encoding 'ragloom-test-bpe' does not round-trip this text"


def test_chunks_sized_by_a_tiktoken_encoding_hold_at_most_size_tokens(encoding: object) -> None:
    text = "the lower thing " * 12 + "éé"
    chunker = RecursiveChunker(RecursiveConfig(size=7, overlap=0, size_unit="tokens", tokenizer=f"tiktoken:{ENCODING}"))
    chunks = chunker.chunk(Document(id="t", text=text, source="t.txt"))
    assert chunker.fingerprint.endswith(":tokenizer=tiktoken:ragloom-test-bpe")
    # words are never split; each chunk is 6 or 7 tokens (" lower" is two: no merge for it); "éé" is four byte tokens
    assert [(c.start, c.end) for c in chunks] == [
        (0, 19),
        (20, 41),
        (42, 63),
        (64, 83),
        (84, 105),
        (106, 127),
        (128, 147),
        (148, 169),
        (170, 191),
        (192, 194),
    ]
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert len(encoding.encode(chunk.text)) <= 7  # type: ignore[attr-defined]


def test_a_relative_tokenizer_path_without_a_base_folder_is_read_from_the_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tok.json").write_bytes(MINILM_TOKENIZER.read_bytes())
    monkeypatch.chdir(tmp_path)
    starts, digest = load_token_starts("tok.json")
    assert starts("Hello world") == [0, 6]
    assert digest.startswith("sha256:")

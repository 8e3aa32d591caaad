"""Token-aware sizing with a real Hugging Face tokenizer.json (all-MiniLM-L6-v2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tokenizers
from chunker_checks import MINILM_TOKENIZER, check_chunks

from ragloom.chunkers import RecursiveChunker, RecursiveConfig, SentenceChunker, SentenceConfig
from ragloom.errors import ConfigError

ARTICLE = (Path(__file__).parent / "fixtures" / "article.txt").read_text(encoding="utf-8")


def encoder() -> tokenizers.Tokenizer:
    tokenizer = tokenizers.Tokenizer.from_file(str(MINILM_TOKENIZER))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@pytest.mark.parametrize("kind", ["recursive", "sentence"])
def test_chunks_of_a_real_article_fit_in_size_tokens(kind: str) -> None:
    options = dict(size=64, overlap=16, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER))
    chunker = RecursiveChunker(RecursiveConfig(**options)) if kind == "recursive" else SentenceChunker(SentenceConfig(**options))  # type: ignore[arg-type]
    chunks = check_chunks(chunker, ARTICLE)
    tokenizer = encoder()
    counts = [len(tokenizer.encode(c.text, add_special_tokens=False).ids) for c in chunks]
    assert max(counts) <= 64
    assert sum(counts) / len(counts) > 40, "chunks are packed close to the token budget"
    # the same text measured in characters gives far longer chunks: tokens really are the unit
    assert max(len(c.text) for c in chunks) > 150


def test_offsets_stay_character_offsets_with_non_ascii_text() -> None:
    text = "Ünïcödé façade café 😀 naïve résumé. " * 30
    chunker = RecursiveChunker(RecursiveConfig(size=20, size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
    for chunk in check_chunks(chunker, text):
        assert text[chunk.start : chunk.end] == chunk.text


def test_fingerprint_names_the_tokenizer_content(tmp_path: Path) -> None:
    copy = tmp_path / "tok.json"
    shutil.copy(MINILM_TOKENIZER, copy)
    by_path = RecursiveChunker(RecursiveConfig(size_unit="tokens", tokenizer="tok.json"), base_dir=tmp_path)
    assert "tokenizer=sha256:" in by_path.fingerprint
    chars = RecursiveChunker(RecursiveConfig())
    assert "tokenizer=" not in chars.fingerprint
    edited = tmp_path / "edited" / "tok.json"
    edited.parent.mkdir()
    edited.write_text(copy.read_text(encoding="utf-8").replace('"[UNK]"', '"[UNKNOWN]"'), encoding="utf-8")
    other = RecursiveChunker(RecursiveConfig(size_unit="tokens", tokenizer="tok.json"), base_dir=edited.parent)
    assert other.fingerprint != by_path.fingerprint, "another tokenizer file content must re-embed"


def test_tokens_need_a_tokenizer_and_a_readable_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tokenizer"):
        RecursiveConfig(size_unit="tokens")
    with pytest.raises(ConfigError, match="absent.json"):
        SentenceChunker(SentenceConfig(size_unit="tokens", tokenizer="absent.json"), base_dir=tmp_path)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="broken.json"):
        RecursiveChunker(RecursiveConfig(size_unit="tokens", tokenizer=str(broken)))


@pytest.mark.parametrize("overlap", [0, 3])
def test_a_cut_inside_a_long_word_never_retokenizes_over_size(overlap: int) -> None:
    """WordPiece: a piece starting inside a word loses its ``##`` prefixes and can need more tokens alone."""
    import random

    from chunker_checks import MINILM_TOKENIZER

    from ragloom.chunkers.recursive import RecursiveChunker, RecursiveConfig
    from ragloom.chunkers.tokens import load_token_starts

    starts = load_token_starts(str(MINILM_TOKENIZER))[0]
    rng = random.Random(1)
    checked = 0
    for _ in range(40):
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzéü") for _ in range(rng.randint(20, 200)))
        text = f"Intro words here {word} and the end."
        size = rng.randint(2, 12)
        chunker = RecursiveChunker(RecursiveConfig(size=size, overlap=min(overlap, size - 1), size_unit="tokens", tokenizer=str(MINILM_TOKENIZER)))
        for start, end in chunker.spans(text):
            assert len(starts(text[start:end])) <= size, (size, text[start:end])
            checked += 1
    assert checked > 150

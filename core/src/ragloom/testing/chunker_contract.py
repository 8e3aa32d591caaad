"""The chunker conformance suite: a mixin of hypothesis-driven pytest tests every chunker subclasses.

A test class subclasses :class:`ChunkerContract`, implements :meth:`make_chunker`
and states the chunker's promises in class attributes::

    class TestParagraphs(ChunkerContract):
        max_size = 400          # no chunk longer (in `measure` units); None: no bound
        max_overlap = 0         # characters two neighbouring chunks may share

        def make_chunker(self):
            return ParagraphChunker(ParagraphsConfig(max_chars=400))

Checked on arbitrary Unicode text mixed with separators, Markdown and
sentence marks: offsets are exact (``document.text[c.start:c.end] == c.text``)
and the records agree with them (ids, index, metadata, tags); chunks come in
document order, none inside its predecessor; every non-whitespace character is
in some chunk; sizes stay within ``max_size``; neighbours overlap by at most
``max_overlap``; the same input gives the same chunks and fingerprint.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragloom.chunkers.base import Chunker
from ragloom.types import Chunk, Document

_SPECIAL = st.sampled_from(
    [
        "\n\n", "\n", ". ", " ", "  ", "\t", "# ", "## ", "\n===\n", "\n---\n", "```", "\n```\n", "|", "| a | b |\n|---|---|\n",
        "e.g. ", "Dr. ", "U.S. ", "3.14", "...", "… ", "! ", "? ", '." ', "。", "\r\n", "\u00a0", "\u2028",
    ]
)  # fmt: skip
_WORDS = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
_FRAGMENT = st.one_of(_SPECIAL, _WORDS, st.sampled_from(["Alpha beta gamma.", "The lamp glows. It dims!", "word"]))

#: Arbitrary Unicode text mixed with separators, including repeated passages.
texts = st.one_of(
    st.text(max_size=300),
    st.lists(_FRAGMENT, min_size=1, max_size=8).flatmap(lambda parts: st.lists(st.sampled_from(parts), min_size=1, max_size=40).map("".join)),
    st.lists(_FRAGMENT, max_size=60).map("".join),
)

# each subclass is its own chunker: the same method running on several of them is intended
_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors])


class ChunkerContract:
    """Conformance tests for a chunker; subclass, implement :meth:`make_chunker`, set the promises."""

    #: The longest a chunk may be, in :meth:`measure` units; None when the chunker promises no bound.
    max_size: int | None = None
    #: How many characters two neighbouring chunks may share (0: none).
    max_overlap: int = 0

    def make_chunker(self) -> Chunker:
        """A fresh chunker under test."""
        raise NotImplementedError

    def measure(self, chunk: Chunk) -> int:
        """A chunk's size in the unit of :attr:`max_size` (default: characters)."""
        return len(chunk.text)

    def may_exceed(self, chunk: Chunk) -> bool:
        """True for a chunk the chunker documents as allowed over :attr:`max_size` (e.g. one unsplittable unit)."""
        return False

    def covered_from(self, text: str) -> int:
        """Where the text that must be chunked starts (a chunker that skips frontmatter says where it ends)."""
        return 0

    def _chunks(self, text: str) -> tuple[Document, list[Chunk]]:
        document = Document.create(text, "contract.txt", metadata={"lang": "x"}, tags=("t",))
        return document, list(self.make_chunker().chunk(document))

    @_SETTINGS
    @given(text=texts)
    def test_offsets_are_exact_and_records_agree(self, text: str) -> None:
        document, chunks = self._chunks(text)
        for index, chunk in enumerate(chunks):
            assert 0 <= chunk.start < chunk.end <= len(text), f"chunk {index}: span {(chunk.start, chunk.end)} out of range or empty"
            assert text[chunk.start : chunk.end] == chunk.text, f"chunk {index}: text does not match its offsets"
            assert chunk.index == index and chunk.document_id == document.id and chunk.source == document.source
            assert chunk.metadata["order"] == index and chunk.metadata["documentId"] == document.id
            assert (chunk.metadata["startOffset"], chunk.metadata["endOffset"]) == (chunk.start, chunk.end)
            assert chunk.metadata["lang"] == "x", "the document's metadata is carried into each chunk"
            assert chunk.tags == document.tags
        assert len({c.id for c in chunks}) == len(chunks), "chunk ids must be unique"

    @_SETTINGS
    @given(text=texts)
    def test_chunks_come_in_document_order(self, text: str) -> None:
        _, chunks = self._chunks(text)
        for previous, chunk in zip(chunks, chunks[1:], strict=False):
            assert chunk.start > previous.start and chunk.end > previous.end, (
                f"{(chunk.start, chunk.end)} after {(previous.start, previous.end)}: out of order or contained"
            )

    @_SETTINGS
    @given(text=texts)
    def test_every_character_is_covered(self, text: str) -> None:
        _, chunks = self._chunks(text)
        covered = bytearray(len(text))
        for chunk in chunks:
            covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
        start = self.covered_from(text)
        missing = [i for i in range(start, len(text)) if not covered[i] and not text[i].isspace()]
        assert not missing, f"characters in no chunk: {[text[i] for i in missing[:10]]} at {missing[:10]}"

    @_SETTINGS
    @given(text=texts)
    def test_sizes_stay_within_max_size(self, text: str) -> None:
        if self.max_size is None:
            return
        _, chunks = self._chunks(text)
        for chunk in chunks:
            if not self.may_exceed(chunk):
                assert self.measure(chunk) <= self.max_size, f"chunk {chunk.text!r} has size {self.measure(chunk)} > {self.max_size}"

    @_SETTINGS
    @given(text=texts)
    def test_overlap_stays_within_max_overlap(self, text: str) -> None:
        _, chunks = self._chunks(text)
        for previous, chunk in zip(chunks, chunks[1:], strict=False):
            shared = max(0, previous.end - chunk.start)
            assert shared <= self.max_overlap, f"neighbours share {shared} characters > max_overlap {self.max_overlap}"

    @_SETTINGS
    @given(text=texts)
    def test_same_input_same_chunks(self, text: str) -> None:
        first, second = self.make_chunker(), self.make_chunker()
        assert isinstance(first.fingerprint, str) and first.fingerprint, "a chunker needs a non-empty fingerprint"
        assert first.fingerprint == second.fingerprint
        document = Document.create(text, "contract.txt")
        assert _spans(first.chunk(document)) == _spans(second.chunk(document)) == _spans(first.chunk(document))

    def test_empty_document_has_no_chunks(self) -> None:
        _, chunks = self._chunks("")
        assert chunks == []


def _spans(chunks: Any) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunks]

"""Markdown structure at its edges: which lines are setext headings, where pipe tables start and end, and what that
does to the chunks and their heading paths (each case is a whole document chunked, compared span by span)."""

from __future__ import annotations

from ragloom.chunkers import MarkdownChunker, MarkdownConfig
from ragloom.types import Document


def _chunks(text: str, size: int = 1000) -> list[tuple[int, int, list[str]]]:
    chunker = MarkdownChunker(MarkdownConfig(size=size))
    chunks = chunker.chunk(Document.create(text, "doc.md"))
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
    return [(c.start, c.end, c.metadata["headings"]) for c in chunks]


def test_the_fingerprint_names_the_markdown_chunker_and_its_options() -> None:
    chunker = MarkdownChunker(MarkdownConfig(size=300, overlap=20))
    assert chunker.fingerprint == 'markdown:v1:{"overlap":20,"separators":["\\n\\n","\\n",". "," "],"size":300}'


# --- setext headings ---


def test_a_setext_heading_on_the_first_line_of_the_document_is_a_heading() -> None:
    assert _chunks("Title\n=====\nBody text.\n") == [(0, 22, ["Title"])]
    assert _chunks("Title\n=\nBody\n") == [(0, 12, ["Title"])]  # an underline of one character


def test_an_underline_on_the_first_line_has_no_title_and_is_text() -> None:
    assert _chunks("===\nSome text.\nMore\n") == [(0, 19, [])]


def test_a_setext_heading_after_a_newline_at_offset_0_starts_at_its_own_line() -> None:
    """The section starts at the title (offset 1), not at the newline before it: 28 characters fit in one chunk."""
    assert _chunks("\nTitle\n=====\nBody text here.\n", size=28) == [(1, 28, ["Title"])]
    assert _chunks("\n| a | b |\n|---|---|\n| 1 | 2 |\n", size=30) == [(1, 30, [])]


def test_an_atx_heading_or_a_list_item_over_dashes_is_not_a_setext_title() -> None:
    assert _chunks("Intro\n\n# Title\n---\nBody\n") == [(0, 5, []), (7, 23, ["Title"])]
    assert _chunks("Intro para\n\n- item\n---\nBody\n") == [(0, 27, [])]


def test_dashes_after_a_closing_fence_do_not_make_the_fence_a_title() -> None:
    assert _chunks("```\ncode\n```\n---\nBody\n") == [(0, 21, [])]


def test_a_rule_that_is_not_a_heading_does_not_stop_the_setext_headings_after_it() -> None:
    assert _chunks("Intro\n\n---\n\nTitle\n=====\nBody\n") == [(0, 10, []), (12, 28, ["Title"])]


# --- pipe tables (a table's rows are never headings, whatever they look like) ---


def test_an_atx_line_as_a_table_header_is_the_table_not_a_heading() -> None:
    assert _chunks("# a | b\n|---|---|\n| 1 | 2 |\n\nAfter\n") == [(0, 34, [])]


def test_a_table_row_that_looks_like_a_heading_stays_in_the_table() -> None:
    assert _chunks("Intro\n\n| h | k |\n|---|---|\n# x | y\n\nAfter\n") == [(0, 41, [])]
    assert _chunks("| a | b |\n|---|---|\n# c | d\n\nAfter\n") == [(0, 34, [])]  # a table on the first line


def test_a_delimiter_row_inside_a_fence_neither_makes_a_table_nor_stops_later_tables() -> None:
    # the "table" inside the fence would end at the blank line, and the heading after it would no longer be code
    assert _chunks("```\n| a |\n|---|\n\n# not a heading\n```\nText\n") == [(0, 41, [])]
    assert _chunks("```\n|---|\n```\n\n| h |\n|---|\n# x | y\n\nAfter\n") == [(0, 41, [])]


def test_a_header_row_must_be_the_line_right_before_the_delimiter_and_hold_a_pipe() -> None:
    # a blank line between: no table, so "# b | c" is a heading
    assert _chunks("| a |\n\n|---|\n# b | c\n\nAfter\n") == [(0, 12, []), (13, 27, ["b | c"])]
    # a header without a pipe: no table
    assert _chunks("a\n---|---\n# x | y\n\nAfter\n") == [(0, 9, []), (10, 24, ["x | y"])]
    # and a refused one does not stop the next table
    assert _chunks("a\n---|---\n\n| h |\n|---|\n# x | y\n\nAfter\n") == [(0, 37, [])]


def test_a_table_ends_at_the_first_line_without_a_pipe() -> None:
    assert _chunks("| h |\n|---|\n| 1 |\n# Heading\nText\n") == [(0, 17, []), (18, 32, ["Heading"])]


# --- frontmatter ---


def test_an_unclosed_frontmatter_is_text_from_the_first_character() -> None:
    assert _chunks("---\ntitle: x\nno closing\n") == [(0, 23, [])]

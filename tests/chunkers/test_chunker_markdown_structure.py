"""Markdown structure at the edges: a block closed on the text's last line, frontmatter comments,
indented headings, setext underlines inside code followed by real headings."""

from __future__ import annotations

from chunker_checks import check_chunks

from ragloom.chunkers import MarkdownChunker, MarkdownConfig


def _chunks(text: str, size: int = 1000) -> list[tuple[str, list[str]]]:
    return [(c.text, c.metadata["headings"]) for c in check_chunks(MarkdownChunker(MarkdownConfig(size=size)), text)]


def test_a_fence_closed_on_the_last_line_without_a_newline_still_holds_its_hashes() -> None:
    text = "# Top\n\n```\n# not a heading\n```"
    assert _chunks(text) == [("# Top\n\n```\n# not a heading\n```", ["Top"])]


def test_a_comment_in_the_frontmatter_is_no_heading() -> None:
    text = "---\ntitle: x\n# a yaml comment\n---\nBody text here.\n"
    assert _chunks(text) == [("Body text here.", [])]


def test_headings_indented_by_up_to_three_spaces_are_headings() -> None:
    text = "  # Indented\n\nText one.\n\n   ## Deeper\n\nText two.\n"
    assert [h for _, h in _chunks(text, size=20)] == [["Indented"], ["Indented"], ["Indented", "Deeper"], ["Indented", "Deeper"]]


def test_setext_underlines_inside_code_do_not_hide_later_headings() -> None:
    text = "Intro\n\n```\ncode\n---\n===\n```\n\nReal title\n==========\n\nBody.\n\nSecond\n------\n\nMore.\n"
    chunks = _chunks(text, size=30)
    assert chunks == [
        ("Intro\n\n```\ncode\n---\n===\n```", []),
        ("Real title\n==========\n\nBody.", ["Real title"]),
        ("Second\n------\n\nMore.", ["Real title", "Second"]),
    ]

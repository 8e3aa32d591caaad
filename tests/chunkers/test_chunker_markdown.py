"""Markdown sections: heading paths, code fences, tables, frontmatter."""

from __future__ import annotations

from chunker_checks import check_chunks, check_spans

from ragloom.chunkers import MarkdownChunker, MarkdownConfig
from ragloom.types import Document

DOC = """---
title: Lumen Lamp
tags: [lamp]
---
# Lumen Lamp

The Lumen Lamp is a desk lamp.

## Install

Unpack the lamp.

### Linux

Run the installer:

```bash
# this is a comment, not a heading
sudo apt install lumen
```

Windows
-------

| Version | Supported |
|---------|-----------|
| 10      | yes       |
| 11      | yes       |

Setup done.

Usage
=====

Press the button.
"""


def chunks_of(text: str, **options: int) -> list[tuple[str, list[str]]]:
    chunker = MarkdownChunker(MarkdownConfig(**options))
    return [(c.text, c.metadata["headings"]) for c in check_chunks(chunker, text)]


def test_heading_paths_atx_and_setext() -> None:
    chunks = chunks_of(DOC, size=400)
    assert chunks == [
        ("# Lumen Lamp\n\nThe Lumen Lamp is a desk lamp.", ["Lumen Lamp"]),
        ("## Install\n\nUnpack the lamp.", ["Lumen Lamp", "Install"]),
        (
            "### Linux\n\nRun the installer:\n\n```bash\n# this is a comment, not a heading\nsudo apt install lumen\n```",
            ["Lumen Lamp", "Install", "Linux"],
        ),
        (
            "Windows\n-------\n\n| Version | Supported |\n|---------|-----------|\n| 10      | yes       |\n| 11      | yes       |\n\nSetup done.",
            ["Lumen Lamp", "Windows"],
        ),
        ("Usage\n=====\n\nPress the button.", ["Usage"]),
    ]


def test_frontmatter_is_excluded() -> None:
    spans = MarkdownChunker(MarkdownConfig(size=400)).spans(DOC)
    assert spans[0][0] == DOC.index("# Lumen Lamp")
    assert all("title:" not in DOC[a:b] for a, b in spans)


def test_code_fence_and_table_stay_whole_when_they_fit() -> None:
    text = "# T\n\n" + "Intro sentence here. " * 3 + "\n\n```\nline one\n\nline two\n\nline three\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"
    chunker = MarkdownChunker(MarkdownConfig(size=40))
    spans = chunker.spans(text)
    check_spans(text, spans, 40)
    texts = [text[a:b] for a, b in spans]
    assert "```\nline one\n\nline two\n\nline three\n```" in texts
    assert "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |" in texts


def test_a_code_block_larger_than_size_is_cut_at_lines() -> None:
    code = "```python\n" + "".join(f"print({i})\n" for i in range(30)) + "```\n"
    text = "# Code\n\n" + code
    spans = MarkdownChunker(MarkdownConfig(size=60)).spans(text)
    check_spans(text, spans, 60)
    assert len(spans) > 3
    assert all(text[b - 1] == ")" or text[b - 3 : b] == "```" or text[a:b] == "# Code" for a, b in spans), "cuts fall at line ends"


def test_a_table_larger_than_size_is_cut_at_row_ends() -> None:
    table = "| id | name |\n|----|------|\n" + "".join(f"| {i} | lamp {i} |\n" for i in range(30))
    text = "# Parts\n\n" + table
    spans = MarkdownChunker(MarkdownConfig(size=60)).spans(text)
    check_spans(text, spans, 60)
    assert len(spans) > 3
    assert all(text[b - 1] == "|" or text[a:b] == "# Parts" for a, b in spans), "cuts fall at row ends"


def test_chunks_never_cross_sections_and_overlap_stays_inside() -> None:
    text = "# A\n\n" + "Alpha words here. " * 10 + "\n\n# B\n\n" + "Beta words here. " * 10
    chunker = MarkdownChunker(MarkdownConfig(size=80, overlap=30))
    chunks = chunker.chunk(Document.create(text, "x.md"))
    boundary = text.index("# B")
    for chunk in chunks:
        assert chunk.end <= boundary or chunk.start >= boundary
        assert chunk.metadata["headings"] == (["A"] if chunk.end <= boundary else ["B"])
    check_spans(text, [(c.start, c.end) for c in chunks], 80)


def test_text_before_the_first_heading_has_an_empty_path() -> None:
    assert chunks_of("Preface.\n\n# One\n\nBody.", size=100) == [("Preface.", []), ("# One\n\nBody.", ["One"])]


def test_thematic_break_is_not_a_heading() -> None:
    text = "Para one.\n\n---\n\nPara two."
    assert [p for _, p in chunks_of(text, size=10)] == [[], [], []]

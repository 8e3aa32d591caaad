"""Markdown edges a user sees in the heading paths: ATX closing sequences and which line closes a code fence."""

from __future__ import annotations

import pytest
from chunker_checks import check_chunks

from ragloom.chunkers import MarkdownChunker, MarkdownConfig


def headings(text: str) -> list[list[str]]:
    """The heading path of each chunk (size large enough for one chunk per section)."""
    return [c.metadata["headings"] for c in check_chunks(MarkdownChunker(MarkdownConfig(size=400)), text)]


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ("## Install ##", "Install"),  # a closing sequence is not part of the title
        ("## Install #####   ", "Install"),
        ("## Install\t#", "Install"),
        ("## C#", "C#"),  # no space before the #: part of the title
        ("## X#", "X#"),
        ("## Section X", "Section X"),
        ("## Install # #", "Install #"),  # only the last run closes
        ("##   Spaced   ", "Spaced"),
        ("## ##", ""),  # only a closing sequence: an empty title
        ("##", ""),
    ],
)
def test_atx_titles(line: str, title: str) -> None:
    assert headings(f"# Top\n\nintro\n\n{line}\n\nbody text") == [["Top"], ["Top", title]]


@pytest.mark.parametrize(
    ("fence", "closed"),
    [
        ("```\ncode\n```\n", True),
        ("```\ncode\n`````\n", True),  # a longer closing run closes
        ("````\ncode\n```\n", False),  # a shorter one does not
        ("```\ncode\n~~~\n", False),  # nor the other fence character
        ("~~~\ncode\n~~~~ \n", True),  # trailing spaces allowed
        ("```\ncode\n```python\n", False),  # a closing line has no info string
        ("```\ncode\n```X\n", False),
        ("```\ncode\n", False),  # an unclosed fence runs to the end
    ],
)
def test_what_closes_a_code_fence(fence: str, closed: bool) -> None:
    text = f"# Top\n\n{fence}## After\n\ntext after"
    assert headings(text) == ([["Top"], ["Top", "After"]] if closed else [["Top"]])

"""The machinery the separator-based chunkers share: pieces, measures, packing.

A chunker first cuts the text into *pieces* — given by their end offsets, each
piece short enough to fit in a chunk — then *packs* consecutive pieces
greedily into chunks. Both steps work on offsets only (nothing is ever searched
for), so repeated passages get the right spans.

Sizes are measured in a monotone *coordinate* per boundary offset: the offset
itself for characters, or the number of tokens starting before it (see
:mod:`ragloom.chunkers.tokens`). Packing only compares coordinates, so the same
code serves both units.

Speed: splitting finds a separator level's ends with one ``finditer`` over the
stretch (no substrings are built: for text beyond Latin-1 each substring costs a
scan), and only oversize pieces are looked at again in Python;
packing does two binary searches per chunk, not a loop per piece.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from operator import sub

#: ``measure(start, end)``: size of ``text[start:end]`` in the chunker's unit.
Measure = Callable[[int, int], int]
#: ``cuts(start, end, size)``: last-resort cut offsets inside an unsplittable stretch (ends included).
HardCuts = Callable[[int, int, int], list[int]]


_FINDERS: dict[str, Callable[[str, int, int], Iterator[re.Match[str]]]] = {}


def _finder(separator: str) -> Callable[[str, int, int], Iterator[re.Match[str]]]:
    """``finditer(text, start, end)`` of a literal separator: left to right, not overlapping, like ``str.split``."""
    finder = _FINDERS.get(separator)
    if finder is None:
        finder = _FINDERS[separator] = re.compile(re.escape(separator)).finditer
    return finder


def split_ends(text: str, start: int, end: int, separators: Sequence[str], size: int, out: list[int]) -> None:
    """Append the end offsets of pieces covering ``text[start:end]``, each at most ``size`` characters.

    The coarsest separator present in the stretch cuts it; the separator stays
    at the end of the piece before it. A piece still over ``size`` is cut with
    the finer separators, and with none left, every ``size`` characters.
    """
    if end - start <= size:
        out.append(end)
        return
    for level, separator in enumerate(separators):  # noqa: B007 - level is used after the loop
        if text.find(separator, start, end) != -1:
            break
    else:
        out.extend(range(start + size, end, size))
        out.append(end)
        return
    ends = [start]
    ends.extend([match.end() for match in _finder(separator)(text, start, end)])
    if ends[-1] != end:  # the last piece has no separator after it
        ends.append(end)
    lengths = list(map(sub, islice(ends, 1, None), ends))
    if max(lengths) <= size:
        out.extend(islice(ends, 1, None))
        return
    finer = separators[level + 1 :]
    done = 1
    for index, length in enumerate(lengths, 1):
        if length > size:
            out.extend(ends[done:index])
            split_ends(text, ends[index - 1], ends[index], finer, size, out)
            done = index + 1
    out.extend(ends[done:])


def split_ends_measured(
    text: str,
    start: int,
    end: int,
    separators: Sequence[str],
    size: int,
    measure: Measure,
    hard_cuts: HardCuts,
    out: list[int],
) -> None:
    """:func:`split_ends` with sizes in another unit (tokens): slower, per-piece checks."""
    if measure(start, end) <= size:
        if end > start:
            out.append(end)
        return
    for level, separator in enumerate(separators):  # noqa: B007 - level is used after the loop
        position = text.find(separator, start, end)
        if position == -1:
            continue
        finer = separators[level + 1 :]
        piece_start, width = start, len(separator)
        while piece_start < end:
            position = text.find(separator, piece_start, end)
            cut = end if position == -1 else position + width
            split_ends_measured(text, piece_start, cut, finer, size, measure, hard_cuts, out)
            piece_start = cut
        return
    out.extend(hard_cuts(start, end, size))


def pack(coords: Sequence[int], size: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing: ``(i, j)`` boundary index pairs, one per chunk.

    ``coords`` are the sizes-so-far at each piece boundary (first boundary the
    start of the stretch, then each piece end); every piece must fit in
    ``size``. A chunk takes whole pieces while it stays within ``size``. The
    next chunk starts with the trailing pieces of the previous one that fit
    within ``overlap`` (and leave room for the next piece), but always after
    the previous chunk's start, so no chunk is contained in its predecessor.
    """
    last = len(coords) - 1
    out: list[tuple[int, int]] = []
    if last < 1:
        return out
    i = 0
    while True:
        j = bisect_right(coords, coords[i] + size, i + 1) - 1
        if j <= i:
            j = i + 1  # a piece over size (an atom): take it alone
        out.append((i, j))
        if j >= last:
            return out
        if overlap:
            back, room = coords[j] - overlap, coords[j + 1] - size
            i = bisect_left(coords, back if back > room else room, i + 1, j)
        else:
            i = j


#: Characters of a chunk's edge looked at first when trimming it (the whole chunk only if they are all whitespace).
_EDGE = 32


def trimmed_spans(text: str, bounds: Sequence[int], pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Spans for packed index pairs, trimmed of edge whitespace, empty and contained ones dropped.

    A span that starts where its predecessor starts once both are trimmed
    covers it (only whitespace differed), so it replaces the predecessor.
    Trimming strips a short window at each edge (``str.strip`` drops exactly
    the characters ``str.isspace`` accepts, measured in C) and copies the whole
    chunk only when that window is all whitespace.
    """
    spans: list[tuple[int, int]] = []
    append = spans.append
    last_start = last_end = -1
    for i, j in pairs:
        start, end = bounds[i], bounds[j]
        if text[start].isspace():
            head = text[start : start + _EDGE if start + _EDGE < end else end]
            kept = head.lstrip()
            start += len(head) - len(kept)
            if not kept and start < end:
                piece = text[start:end]
                start += len(piece) - len(piece.lstrip())
        if end > start and text[end - 1].isspace():
            tail = text[end - _EDGE if end - _EDGE > start else start : end]
            kept = tail.rstrip()
            end -= len(tail) - len(kept)
            if not kept and end > start:
                end = start + len(text[start:end].rstrip())
        if end <= start or (start >= last_start and end <= last_end):
            continue
        if start == last_start:  # only leading whitespace told them apart: keep the longer one
            spans.pop()
        append((start, end))
        last_start, last_end = start, end
    return spans

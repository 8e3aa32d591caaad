"""Sentence boundaries without a model, shared by the ``sentence`` and ``semantic`` chunkers.

The possible end marks are located with ``str.split`` scans (C loops), and each is checked:

- a sentence ends after ``.``, ``!``, ``?`` (or ``。！？``), closing quotes and
  brackets, and whitespace — when the next character is not lower-case;
- a blank line always ends a sentence (headings, list items without a period);
- abbreviations don't end a sentence: a known one (``Dr.``, ``e.g.``,
  ``etc.``, ``Fig.`` …), an initial (``J. Smith``) or a dotted one (``U.S.``,
  ``Ph.D.``; a word of over 40 characters is none); neither do decimals (``3.14``: no whitespace) nor ellipses
  (``...``, ``…``).

Each sentence keeps its trailing whitespace; one longer than ``size`` is cut
by the recursive splitter (lines, then spaces, then every ``size``).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from itertools import accumulate, chain, repeat
from operator import add, sub

from ragloom.chunkers.pieces import split_ends, split_ends_measured
from ragloom.chunkers.tokens import TokenMeasure

#: Separators used to cut a single sentence longer than ``size``.
LONG_SENTENCE_SEPARATORS = ("\n", "; ", ", ", " ")

ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt rev gen col lt sgt capt cmdr gov sen rep hon pres
    inc ltd co corp llc bros dept univ assn est
    e.g i.e etc vs cf al approx ca viz resp fig figs eq eqs no nos vol vols pp p ch sec chap ed eds
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    """.split()
)

_TERMINATORS = ".!?‽…。！？\n"
_ASCII_TERMINATORS = ".!?\n"
_LATIN = re.compile(r"""(?:[.!?‽]+|…)["'”’»)\]]*\s+""")
_CJK = re.compile(r"[。！？]+[」』”’）)]*\s*")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")


def _is_abbreviation(text: str, dot: int) -> bool:
    """Does the word ending at ``text[dot] == "."`` abbreviate (no sentence end)?"""
    if dot >= 7 and text[dot - 7 : dot].isalpha():
        return False  # seven letters or more: longer than any abbreviation part
    low = dot - 41 if dot > 41 else 0
    start = max(text.rfind(" ", low, dot), text.rfind("\n", low, dot)) + 1
    if dot - start > 40:
        return False  # no space in the 41 characters before: a word too long to abbreviate
    word = text[start:dot].lstrip("\"'“‘([")
    if not word:
        return False
    if word.lower() in ABBREVIATIONS:
        return True
    if len(word) == 1 and word.isalpha():
        return True  # an initial: "J. Smith"
    if "." in word:  # dotted: "U.S", "Ph.D", "e.g"
        return all(0 < len(part) <= 3 and part.isalpha() for part in word.split("."))
    return False


def _positions(text: str, char: str) -> list[int]:
    """Every offset of ``char`` in ``text``, found by C loops (split + accumulate)."""
    parts = text.split(char)
    if len(parts) == 1:
        return []
    positions = list(accumulate(map(add, map(len, parts), repeat(1)), initial=-1))
    return positions[1:-1]


def _candidates(text: str) -> list[int]:
    """Offsets of the characters a sentence can end with, in order."""
    terminators = _ASCII_TERMINATORS if text.isascii() else _TERMINATORS
    found = [_positions(text, char) for char in terminators if char in text]
    if len(found) == 1:
        return found[0]
    return sorted(chain.from_iterable(found))


def sentence_ends(text: str, start: int = 0, end: int | None = None) -> list[int]:
    """End offsets of the sentences of ``text[start:end]`` (trailing whitespace included; ``end`` last)."""
    end = len(text) if end is None else end
    ends: list[int] = []
    append = ends.append
    segment = text if start == 0 and end == len(text) else text[:end]
    candidates = _candidates(segment)
    if start:
        candidates = candidates[bisect_left(candidates, start) :]
    latin, cjk, paragraph = _LATIN.match, _CJK.match, _PARAGRAPH.match
    scanned = start
    for position in candidates:
        if position < scanned:
            continue
        first = text[position]
        if first == "\n":
            match = paragraph(text, position, end)
            if match is None:
                continue
            scanned = cut = match.end()
            if cut >= end:
                break
            append(cut)
            continue
        if first in "。！？":
            match = cjk(text, position, end)
            scanned = cut = match.end()  # type: ignore[union-attr] # always matches its first character
            if cut >= end:
                break
            append(cut)
            continue
        match = latin(text, position, end)
        if match is None:
            continue
        scanned = cut = match.end()
        if cut >= end:
            break
        if cut - position == 2:  # the common case: one mark, one space
            if first == "…" or text[cut].islower() or (first == "." and _is_abbreviation(text, position)):
                continue
            append(cut)
            continue
        matched = match.group()
        if matched.count("\n") >= 2:  # a blank line inside the whitespace
            append(cut)
            continue
        if text[cut].islower():
            continue
        if first == "…" or matched.startswith(".."):
            continue
        if first == "." and matched[1:2] != "." and _is_abbreviation(text, position):
            continue
        append(cut)
    ends.append(end)
    return ends


def sentence_pieces(text: str, start: int, end: int, size: int, tokens: TokenMeasure | None) -> list[int]:
    """``[start, piece ends...]``: sentences, each long one cut to fit ``size``."""
    ends = sentence_ends(text, start, end)
    bounds = [start, *ends]
    if tokens is None and max(map(sub, ends, bounds)) <= size:
        return bounds
    bounds = [start]
    previous = start
    for cut in ends:
        if tokens is None:
            if cut - previous <= size:
                bounds.append(cut)
            else:
                split_ends(text, previous, cut, LONG_SENTENCE_SEPARATORS, size, bounds)
        else:
            split_ends_measured(text, previous, cut, LONG_SENTENCE_SEPARATORS, size, tokens.measure, tokens.hard_cuts, bounds)
        previous = cut
    return bounds

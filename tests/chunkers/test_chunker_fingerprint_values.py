"""A chunker fingerprint names every option, also options JSON has no type for (a plugin config's paths, dates)."""

from __future__ import annotations

import datetime
from pathlib import PurePosixPath

import attrs

from ragloom.chunkers import fingerprint_of


@attrs.frozen
class PluginConfig:
    vocabulary: PurePosixPath = PurePosixPath("vocab/words.txt")
    since: datetime.date = datetime.date(2024, 5, 1)
    size: int = 300


def test_options_without_a_json_type_are_named_by_their_text() -> None:
    assert fingerprint_of("mine", PluginConfig()) == 'mine:v1:{"since":"2024-05-01","size":300,"vocabulary":"vocab/words.txt"}'
    # another value of such an option is another fingerprint (the chunks are re-embedded)
    assert fingerprint_of("mine", PluginConfig(vocabulary=PurePosixPath("vocab/other.txt"))) != fingerprint_of("mine", PluginConfig())

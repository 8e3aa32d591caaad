"""The ``text`` loader: one document per plain-text file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

from ragloom.loaders.base import DEFAULT_MAX_FILE_BYTES, decode_utf8, iter_files, read_bytes
from ragloom.types import Document

TEXT_SUFFIXES = (".txt", ".text", ".rst", ".log")


@attrs.frozen(kw_only=True)
class TextLoaderConfig:
    """Options of the text loader."""

    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=attrs.validators.gt(0))


def file_metadata(path: str) -> dict[str, str]:
    """Metadata every file loader adds."""
    return {"file_name": Path(path).name}


class TextLoader:
    """UTF-8 text files (a BOM is removed); a directory loads every file in sorted order."""

    def __init__(self, config: TextLoaderConfig | None = None):
        self.config = config or TextLoaderConfig()

    def read_text(self, path: str) -> str:
        """The decoded text of one file."""
        return decode_utf8(read_bytes(path, self.config.max_file_bytes), path)

    def load(self, source: str) -> Iterator[Document]:
        """One document per file."""
        paths = iter_files(source) if Path(source).is_dir() else [source]
        for path in paths:
            yield Document.create(self.read_text(path), path, metadata=file_metadata(path))

"""The ``text`` loader: one document per plain-text file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import attrs

from ragloom.errors import LoaderError
from ragloom.loaders.base import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TEXT_CHARS,
    check_text_chars,
    decode_text,
    file_metadata,
    iter_files,
    read_bytes,
)
from ragloom.types import Document

TEXT_SUFFIXES = (".txt", ".text", ".rst", ".log")


@attrs.frozen(kw_only=True)
class TextLoaderConfig:
    """Options of the text loader.

    ``encoding``: force a codec (default: UTF-8 with or without BOM, else detected);
    ``detect_encoding``: guess the encoding of non-UTF-8 files with
    charset-normalizer (false: such files are a LoaderError);
    ``max_file_bytes``, ``max_text_chars``: limits.
    """

    encoding: str | None = None
    detect_encoding: bool = True
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=attrs.validators.gt(0))
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=attrs.validators.gt(0))


class TextLoader:
    """Text files (UTF-8 with or without BOM, other encodings detected); a directory loads every file in sorted order."""

    def __init__(self, config: TextLoaderConfig | None = None):
        self.config = config or TextLoaderConfig()

    def read_text(self, path: str) -> str:
        """The decoded text of one file."""
        data = read_bytes(path, self.config.max_file_bytes)
        if self.config.encoding:
            try:
                text = data.decode(self.config.encoding)
            except LookupError:
                raise LoaderError(f"unknown encoding {self.config.encoding!r} (encoding)", source=path) from None
            except UnicodeDecodeError as exc:
                raise LoaderError(
                    f"not valid {self.config.encoding} ({exc.reason})", source=path, position=f"byte {exc.start}"
                ) from None
            text = text.removeprefix("\ufeff")
        else:
            text = decode_text(data, path, detect=self.config.detect_encoding)
        return check_text_chars(text, self.config.max_text_chars, path)

    def load(self, source: str) -> Iterator[Document]:
        """One document per file."""
        paths = iter_files(source) if Path(source).is_dir() else [source]
        for path in paths:
            yield Document.create(self.read_text(path), path, metadata=file_metadata(path))

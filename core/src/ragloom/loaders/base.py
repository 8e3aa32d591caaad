"""The Loader contract and file helpers shared by the file loaders.

A loader turns one source (a file path or a URL) into Documents. Documents of
one source come out together; each carries ``source`` (the resolved path or
the URL) and a stable id (:meth:`ragloom.types.Document.create`). Failures
raise :class:`ragloom.errors.LoaderError` naming the source and, where it
helps, the position (line, row, page). Loaders declare the file suffixes and
URL schemes they handle when they register.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol, runtime_checkable

from ragloom.errors import LoaderError
from ragloom.types import Document

DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024


@runtime_checkable
class Loader(Protocol):
    """Turns a source into documents."""

    def load(self, source: str) -> Iterable[Document]:
        """Documents of the source, in order."""


def is_url(source: str) -> bool:
    """True for ``scheme://...`` sources other than ``file://``."""
    head, sep, _ = source.partition("://")
    return bool(sep) and head.isalpha() and head.lower() != "file"


def resolve_source(source: str | os.PathLike[str], base_dir: Path | None = None) -> str:
    """Absolute path of a file source (URLs pass through)."""
    text = os.fspath(source)
    if is_url(text):
        return text
    if text.startswith("file://"):
        text = text[len("file://") :]
    path = Path(text).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return str(path.resolve())


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """File content, refusing files over ``max_bytes``; errors become LoaderError."""
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise LoaderError(f"file is {size} bytes, over the limit of {max_bytes} (max_file_bytes)", source=path)
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except LoaderError:
        raise
    except FileNotFoundError:
        raise LoaderError("file not found", source=path) from None
    except IsADirectoryError:
        raise LoaderError("is a directory, not a file", source=path) from None
    except OSError as exc:
        raise LoaderError(f"cannot read file: {exc.strerror or exc}", source=path) from exc
    if len(data) > max_bytes:
        raise LoaderError(f"file grew over the limit of {max_bytes} bytes while reading", source=path)
    return data


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text with an optional BOM removed; LoaderError with the byte offset otherwise."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoaderError(f"not valid UTF-8 ({exc.reason})", source=source, position=f"byte {exc.start}") from None


def iter_files(directory: str) -> Iterable[str]:
    """Files under ``directory``, recursively, in sorted order; hidden entries skipped."""
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield os.path.join(root, name)


def suffix_of(path: str) -> str:
    """Lower-cased suffix with the dot (``.md``); ``""`` when there is none."""
    return Path(path).suffix.lower()

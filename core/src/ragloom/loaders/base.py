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
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable

from ragloom import confine
from ragloom.errors import LoaderError
from ragloom.types import Document

DEFAULT_MAX_FILE_BYTES = 100 * 1024 * 1024
DEFAULT_MAX_TEXT_CHARS = 50 * 1024 * 1024
#: Streaming loaders (csv, jsonl) hold one row at a time, so their files may be larger.
DEFAULT_MAX_STREAM_BYTES = 4 * 1024 * 1024 * 1024

_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\x00\x00\xfe\xff", "utf-32-be"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)


@runtime_checkable
class Loader(Protocol):
    """Turns a source into documents."""

    def load(self, source: str) -> Iterable[Document]:
        """Documents of the source, in order."""
        ...


@runtime_checkable
class SourceRouter(Loader, Protocol):
    """A loader that routes sources to other loaders (the ``auto`` loader the pipeline ingests through)."""

    def expand(self, source: str) -> tuple[list[str], list[str]]:
        """``(files some loader reads, files none does)``: ``[source]`` for a file or URL, sorted files for a directory."""
        ...

    def name_for(self, source: str) -> str | None:
        """The registered name of the loader for one file (by suffix) or URL (by scheme), or None."""
        ...

    def get(self, name: str) -> Loader:
        """The loader registered as ``name``, built once with its ``[loaders.<name>]`` options."""
        ...


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
    if "\x00" in text:
        raise LoaderError("path contains a NUL byte", source=text.replace("\x00", "\\0"))
    try:
        os.fsencode(text)
    except UnicodeEncodeError:
        raise LoaderError("path is not valid Unicode (a lone surrogate)", source=text.encode("utf-8", "backslashreplace").decode("utf-8")) from None
    path = Path(text).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return os.path.realpath(path)  # unlike Path.resolve, never raises on a link loop


def read_bytes(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """File content, refusing files over ``max_bytes``; errors become LoaderError.

    Read straight from the descriptor (no buffered file object): one ``read``
    of the size ``fstat`` reported plus one byte, more only if the file grew.
    """
    fd, size = _open_checked(path, max_bytes)
    try:
        parts: list[bytes] = []
        total = 0
        want = min(size, max_bytes) + 1
        while total <= max_bytes:
            try:
                block = os.read(fd, want)
            except OSError as exc:
                raise LoaderError(f"cannot read file: {exc.strerror or exc}", source=path) from exc
            if not block:
                break
            parts.append(block)
            total += len(block)
            want = min(1 << 20, max_bytes + 1 - total)
    finally:
        os.close(fd)
    if total > max_bytes:
        raise LoaderError(f"file grew over the limit of {max_bytes} bytes while reading", source=path)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def open_limited(path: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> BinaryIO:
    """An open binary file for streaming loaders, refusing files over ``max_bytes``.

    Only regular files are opened (a FIFO, a device such as ``/dev/zero`` or a
    socket is refused without blocking); the size is checked on the opened
    file. Under :func:`ragloom.confine.confined` the file is reached without
    following links out of the allowed folders.
    """
    fd, _size = _open_checked(path, max_bytes)
    return os.fdopen(fd, "rb")


def _open_checked(path: str, max_bytes: int) -> tuple[int, int]:
    """``(descriptor, size)`` of a regular file within ``max_bytes``, opened blocking (see :func:`open_limited`)."""
    confinement = confine.active()
    try:
        if confinement is not None:
            fd = confinement.open(path)
        else:
            if "\x00" in path:
                raise LoaderError("path contains a NUL byte", source=path.replace("\x00", "\\0"))
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except LoaderError:
        raise
    except FileNotFoundError:
        raise LoaderError("file not found", source=path) from None
    except IsADirectoryError:
        raise LoaderError("is a directory, not a file", source=path) from None
    except (OSError, ValueError) as exc:
        raise LoaderError(f"cannot read file: {getattr(exc, 'strerror', None) or exc}", source=path) from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise LoaderError("is a directory, not a file", source=path)
        if not stat.S_ISREG(info.st_mode):
            raise LoaderError("not a regular file (a FIFO, device or socket); only regular files are read", source=path)
        if info.st_size > max_bytes:
            raise LoaderError(f"file is {info.st_size} bytes, over the limit of {max_bytes} (max_file_bytes)", source=path)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return fd, info.st_size
    except BaseException:
        os.close(fd)
        raise


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text with an optional BOM removed; LoaderError with the byte offset otherwise."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoaderError(f"not valid UTF-8 ({exc.reason})", source=source, position=f"byte {exc.start}") from None


def bom_encoding(data: bytes) -> tuple[str | None, int]:
    """``(encoding, bom length)`` of a byte-order mark at the start of ``data``; ``(None, 0)`` without one."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding, len(bom)
    return None, 0


def decode_text(data: bytes, source: str, *, declared: str | None = None, detect: bool = True) -> str:
    """Decode bytes: a BOM wins, then a ``declared`` encoding, then UTF-8, then detection.

    Detection uses charset-normalizer; when it finds nothing plausible (binary
    data) or ``detect`` is false, a LoaderError says so.
    """
    encoding, skip = bom_encoding(data)
    if encoding is not None:
        try:
            return data[skip:].decode(encoding)
        except UnicodeDecodeError as exc:
            raise LoaderError(f"not valid {encoding} despite its byte-order mark ({exc.reason})", source=source, position=f"byte {exc.start + skip}") from None
    if declared:
        try:
            return data.decode(declared)
        except LookupError:
            pass  # an unknown declared charset: fall through to UTF-8 / detection
        except UnicodeDecodeError:
            pass  # a wrong declaration: fall through
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        utf8_error = exc
    if not detect:
        raise LoaderError(f"not valid UTF-8 ({utf8_error.reason})", source=source, position=f"byte {utf8_error.start}") from None
    if b"\x00" in data[:8192]:
        raise LoaderError("looks like binary data, not text (NUL bytes, no byte-order mark)", source=source)
    import charset_normalizer

    best = charset_normalizer.from_bytes(data).best()
    if best is None:
        raise LoaderError(
            f"not valid UTF-8 (byte {utf8_error.start}) and no text encoding could be detected; convert the file to UTF-8 or set `encoding`",
            source=source,
        )
    return str(best)


def check_text_chars(text: str, max_chars: int, source: str, position: object = None) -> str:
    """``text`` unchanged, or LoaderError when it is longer than ``max_chars`` (max_text_chars)."""
    if len(text) > max_chars:
        raise LoaderError(f"extracted text is over the limit of {max_chars} characters (max_text_chars)", source=source, position=position)
    return text


def name_of(path: str) -> str:
    """``Path(path).name`` without building a Path (called per file while a directory is ingested)."""
    if os.sep == "/":
        tail = path.rpartition("/")[2]
        if tail and tail != ".":
            return tail
    return Path(path).name  # trailing separator or "." component, or Windows separators


def file_metadata(path: str) -> dict[str, str]:
    """Metadata every file loader adds."""
    return {"file_name": name_of(path)}


def iter_files(directory: str) -> Iterable[str]:
    """Files under ``directory``, recursively, in sorted order; hidden entries skipped."""
    for root, dirs, files in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            if not name.startswith("."):
                yield os.path.join(root, name)


def files_of(source: str, suffixes: tuple[str, ...]) -> Iterable[str]:
    """``[source]`` for a file; for a directory its files with one of ``suffixes``, recursively, in sorted order."""
    if not os.path.isdir(source):
        return [source]
    return (path for path in iter_files(source) if suffix_of(path) in suffixes)


def suffix_of(path: str) -> str:
    """Lower-cased suffix with the dot (``.md``); ``""`` when there is none."""
    name = name_of(path)
    dot = name.rfind(".")
    return name[dot:].lower() if 0 < dot < len(name) - 1 else ""  # as Path.suffix: none for ".bashrc" or "name."

"""The ``csv`` loader: one document per row, streamed (memory bounded by the longest row).

(The module is ``csvfile`` so it does not shadow the standard library's ``csv``.)
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator
from typing import Any

import attrs

from ragloom.errors import LoaderError
from ragloom.loaders.base import (
    DEFAULT_MAX_STREAM_BYTES,
    DEFAULT_MAX_TEXT_CHARS,
    check_text_chars,
    file_metadata,
    files_of,
    open_limited,
)
from ragloom.types import Document

CSV_SUFFIXES = (".csv", ".tsv")
SNIFF_DELIMITERS = ",;\t|"
_SAMPLE_BYTES = 64 * 1024
_SNIFF_BYTES = 16 * 1024


def _one_char(_instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and len(value) != 1:
        raise ValueError(f"{attribute.name} must be a single character, got {value!r}")


@attrs.frozen(kw_only=True)
class CsvLoaderConfig:
    """Options of the csv loader.

    ``content_columns``: columns whose values make the text (one column: its
    value; several, or none given: ``name: value`` lines of every column not
    in ``metadata_columns``); ``metadata_columns``: columns copied into
    metadata; ``id_column``: a column of unique ids (default: the row number);
    ``delimiter``: a single character (default: sniffed from the start of the
    file among ``, ; tab |``; ``\\t`` for ``.tsv``); ``quotechar``;
    ``has_header``: false for files without a header row (columns are then
    ``column_1``, ``column_2`` … or ``column_names``); ``skip_empty_rows``;
    ``encoding``: a codec (default: UTF-8 with or without BOM, else detected
    from the first 64 KiB); ``max_file_bytes``, ``max_text_chars`` (per row).
    """

    content_columns: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    metadata_columns: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    id_column: str | None = None
    delimiter: str | None = attrs.field(default=None, validator=_one_char)
    quotechar: str = attrs.field(default='"', validator=_one_char)
    has_header: bool = True
    column_names: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    skip_empty_rows: bool = True
    encoding: str | None = None
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_STREAM_BYTES, validator=attrs.validators.gt(0))
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=attrs.validators.gt(0))


def _sample_encoding(sample: bytes, source: str) -> str:
    """Encoding of a file from its first bytes: UTF-8 (BOM removed) when they decode, else detected."""
    if sample.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    import charset_normalizer

    best = charset_normalizer.from_bytes(sample).best()
    if best is None or b"\x00" in sample:
        raise LoaderError(
            "not valid UTF-8 and no text encoding could be detected; convert the file to UTF-8 or set `encoding`", source=source
        )
    return best.encoding


def _sniff_delimiter(sample: str) -> str:
    lines = sample.splitlines()
    if len(lines) > 1 and not sample.endswith(("\n", "\r")):
        lines = lines[:-1]  # the sample may end inside a line
    try:
        return csv.Sniffer().sniff("\n".join(lines[:50]), delimiters=SNIFF_DELIMITERS).delimiter
    except csv.Error:
        return ","


class CsvLoader:
    """CSV / TSV files: one document per row; ``row`` (1-based, header excluded) in metadata."""

    def __init__(self, config: CsvLoaderConfig | None = None):
        self.config = config or CsvLoaderConfig()

    def _columns(self, header: list[str], path: str) -> tuple[list[str], list[str]]:
        config = self.config
        names = set(header)
        for option, wanted in (
            ("content_columns", config.content_columns),
            ("metadata_columns", config.metadata_columns),
            ("id_column", (config.id_column,) if config.id_column else ()),
        ):
            missing = [name for name in wanted if name not in names]
            if missing:
                raise LoaderError(f"{option}: no column {missing[0]!r}; the columns are {header}", source=path, position="header")
        content = list(config.content_columns) or [name for name in header if name not in config.metadata_columns]
        return content, list(config.metadata_columns)

    def load_file(self, path: str) -> Iterator[Document]:
        """Documents of one file, read row by row."""
        config = self.config
        with open_limited(path, config.max_file_bytes) as raw:
            try:
                sample = raw.read(_SAMPLE_BYTES)
                raw.seek(0)
            except OSError as exc:
                raise LoaderError(f"cannot read file: {exc.strerror or exc}", source=path) from exc
            encoding = config.encoding or _sample_encoding(sample, path)
            try:
                text = io.TextIOWrapper(raw, encoding=encoding, newline="")
            except LookupError:
                raise LoaderError(f"unknown encoding {encoding!r} (encoding)", source=path) from None
            yield from self._rows(text, sample[:_SNIFF_BYTES].decode(encoding, "replace"), path)

    def _rows(self, text: io.TextIOWrapper, sample: str, path: str) -> Iterator[Document]:
        config = self.config
        delimiter = config.delimiter or ("\t" if path.lower().endswith(".tsv") else _sniff_delimiter(sample))
        if csv.field_size_limit() < config.max_text_chars:  # process-wide; only ever raised, to the documented per-row bound
            csv.field_size_limit(config.max_text_chars)
        reader = csv.reader(text, delimiter=delimiter, quotechar=config.quotechar, strict=False)
        header: list[str] | None = None
        content: list[str] = []
        meta_columns: list[str] = []
        base_metadata = file_metadata(path)
        seen_ids: set[str] = set()
        row_number = 0
        while True:
            first_line = reader.line_num + 1  # the file line where this row starts
            try:
                values = next(reader)
            except StopIteration:
                return
            except UnicodeDecodeError as exc:
                raise LoaderError(
                    f"not valid {text.encoding} ({exc.reason})", source=path, position=f"row {row_number + 1}"
                ) from None
            except csv.Error as exc:
                if "field limit" in str(exc):
                    raise LoaderError(
                        f"a field is over the limit of {config.max_text_chars} characters (max_text_chars)", source=path, position=f"line {reader.line_num}"
                    ) from None
                raise LoaderError(f"malformed CSV: {exc}", source=path, position=f"line {reader.line_num}") from None
            if header is None:
                if config.has_header:
                    header = [name.strip().lstrip("\ufeff") for name in values]
                    content, meta_columns = self._columns(header, path)
                    continue
                header = list(config.column_names) or [f"column_{i}" for i in range(1, len(values) + 1)]
                content, meta_columns = self._columns(header, path)
            if not any(value.strip() for value in values):
                continue  # a blank line
            row_number += 1
            position = f"row {row_number}"
            if len(values) > len(header):
                raise LoaderError(
                    f"row has {len(values)} values but there are {len(header)} columns (wrong delimiter {delimiter!r}?)",
                    source=path,
                    position=position,
                )
            row = dict(zip(header, values, strict=False))
            if len(content) == 1:
                body = row.get(content[0], "")
            else:
                body = "\n".join(f"{name}: {row.get(name, '')}" for name in content if row.get(name, ""))
            if config.skip_empty_rows and not body.strip():
                continue
            check_text_chars(body, config.max_text_chars, path, position)
            metadata: dict[str, Any] = {**base_metadata, "row": row_number, "line": first_line}
            for name in meta_columns:
                metadata[name] = row.get(name, "")
            part: str | int = row_number
            if config.id_column:
                value = row.get(config.id_column, "")
                if not value:
                    raise LoaderError(f"empty id in column {config.id_column!r} (id_column)", source=path, position=position)
                part = f"id:{value}"
                if part in seen_ids:
                    raise LoaderError(f"duplicate id {value!r} in column {config.id_column!r}", source=path, position=position)
                seen_ids.add(part)
                metadata["id"] = value
            yield Document.create(body, path, part=part, metadata=metadata)

    def load(self, source: str) -> Iterator[Document]:
        """Documents of a file; a directory loads its CSV/TSV files in sorted order."""
        for path in files_of(source, CSV_SUFFIXES):
            yield from self.load_file(path)

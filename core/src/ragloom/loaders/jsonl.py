"""The ``jsonl`` loader: one document per line, streamed (memory bounded by the longest line)."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from ragloom.errors import LoaderError
from ragloom.loaders.base import DEFAULT_MAX_STREAM_BYTES, DEFAULT_MAX_TEXT_CHARS, files_of, open_limited
from ragloom.loaders.json import ItemReader, JsonFields, parse_json
from ragloom.types import Document

JSONL_SUFFIXES = (".jsonl", ".ndjson")
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


@attrs.frozen(kw_only=True)
class JsonlLoaderConfig(JsonFields):
    """Options of the jsonl loader.

    ``content_field``: dotted path of the text in each line's value (default:
    the whole value, as text or JSON); ``id_field``: dotted path of a unique id
    (default: the line number); ``metadata_fields``: dotted paths copied into
    metadata; ``max_line_bytes``: longest accepted line;
    ``max_file_bytes``, ``max_text_chars``: limits.
    """

    max_line_bytes: int = attrs.field(default=DEFAULT_MAX_LINE_BYTES, validator=attrs.validators.gt(0))
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_STREAM_BYTES, validator=attrs.validators.gt(0))
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=attrs.validators.gt(0))


class JsonlLoader:
    """JSON Lines files: each non-blank line is a JSON value and a document; ``line`` (1-based) in metadata."""

    def __init__(self, config: JsonlLoaderConfig | None = None):
        self.config = config or JsonlLoaderConfig()

    def load_file(self, path: str) -> Iterator[Document]:
        """Documents of one file, read line by line."""
        config = self.config
        reader = ItemReader(config, path, config.max_text_chars)
        with open_limited(path, config.max_file_bytes) as handle:
            number = 0
            while True:
                try:
                    raw = handle.readline(config.max_line_bytes + 1)
                except OSError as exc:
                    raise LoaderError(
                        f"cannot read file: {exc.strerror or exc}", source=path, position=f"line {number + 1}"
                    ) from exc
                if not raw:
                    return
                number += 1
                position = f"line {number}"
                if len(raw) > config.max_line_bytes and not raw.endswith(b"\n"):
                    raise LoaderError(
                        f"line is longer than {config.max_line_bytes} bytes (max_line_bytes)", source=path, position=position
                    )
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise LoaderError(f"not valid UTF-8 ({exc.reason})", source=path, position=position) from None
                if not line.strip():
                    continue
                item = parse_json(line, path, position)
                yield reader.document(item, number, {"line": number}, position)

    def load(self, source: str) -> Iterator[Document]:
        """Documents of a file; a directory loads its JSON Lines files in sorted order."""
        for path in files_of(source, JSONL_SUFFIXES):
            yield from self.load_file(path)

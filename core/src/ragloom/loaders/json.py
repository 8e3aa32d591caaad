"""The ``json`` loader: one document per file, or one per item of an array.

Fields are named by dotted paths (``"body.text"``, ``"authors.0.name"``); a
number in a path indexes a list. The helpers here are shared with the
``jsonl`` loader.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs

from ragloom.errors import LoaderError
from ragloom.loaders.base import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_TEXT_CHARS,
    check_text_chars,
    decode_text,
    file_metadata,
    files_of,
    read_bytes,
)
from ragloom.types import Document

JSON_SUFFIXES = (".json",)
_MISSING = object()


def _dotted_path(_instance: Any, attribute: attrs.Attribute, value: str | None) -> None:
    if value is not None and (not value or any(not part for part in value.split("."))):
        raise ValueError(f"{attribute.name} must be a dotted path like 'body.text', got {value!r}")


def _dotted_paths(instance: Any, attribute: attrs.Attribute, value: tuple[str, ...]) -> None:
    for item in value:
        _dotted_path(instance, attribute, item)


def lookup(data: Any, path: str) -> Any:
    """The value at a dotted ``path`` in ``data``, or ``_MISSING``."""
    current = data
    for part in path.split("."):
        if isinstance(current, dict):
            current = current.get(part, _MISSING)
        elif isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            current = current[index] if -len(current) <= index < len(current) else _MISSING
        else:
            return _MISSING
        if current is _MISSING:
            return _MISSING
    return current


def as_text(value: Any) -> str:
    """Text of a JSON value: strings as they are, lists of strings one per line, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, indent=2 if isinstance(value, (dict, list)) else None)


def parse_json(text: str, source: str, position: Any = None) -> Any:
    """``json.loads`` with errors (syntax, nesting too deep) as LoaderError."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if position is None else position
        raise LoaderError(f"invalid JSON: {exc.msg}", source=source, position=where) from None
    except RecursionError:
        raise LoaderError("JSON nested too deeply", source=source, position=position) from None
    except ValueError as exc:  # e.g. an integer over Python's 4,300-digit conversion limit
        raise LoaderError(f"invalid JSON: {exc}", source=source, position=position) from None


@attrs.frozen(kw_only=True)
class JsonFields:
    """How a JSON value becomes a document: shared by the json and jsonl loaders."""

    content_field: str | None = attrs.field(default=None, validator=_dotted_path)
    id_field: str | None = attrs.field(default=None, validator=_dotted_path)
    metadata_fields: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_dotted_paths)


class ItemReader:
    """Turns parsed JSON items into documents; checks ids are unique within the source."""

    def __init__(self, fields: JsonFields, source: str, max_text_chars: int):
        self.fields = fields
        self.source = source
        self.max_text_chars = max_text_chars
        self.base_metadata = file_metadata(source)
        self.seen_ids: set[str] = set()

    def document(self, item: Any, part: int | None, metadata: dict[str, Any], position: str) -> Document:
        """The document of one item; ``part`` (index or line) is its id unless ``id_field`` is set."""
        fields = self.fields
        value = item
        if fields.content_field is not None:
            value = lookup(item, fields.content_field)
            if value is _MISSING:
                raise LoaderError(
                    f"content field {fields.content_field!r} is missing (content_field)", source=self.source, position=position
                )
        try:
            text = as_text(value)
        except (RecursionError, ValueError) as exc:
            raise LoaderError(
                f"cannot turn the value into text: {type(exc).__name__}", source=self.source, position=position
            ) from None
        check_text_chars(text, self.max_text_chars, self.source, position)
        doc_part: str | int | None = part
        meta = {**self.base_metadata, **metadata}
        if fields.id_field is not None:
            value = lookup(item, fields.id_field)
            if value is _MISSING or value is None or isinstance(value, (dict, list)):
                raise LoaderError(
                    f"id field {fields.id_field!r} is missing or not a scalar (id_field)", source=self.source, position=position
                )
            doc_part = f"id:{value}"
            if doc_part in self.seen_ids:
                raise LoaderError(
                    f"duplicate id {value!r} in id field {fields.id_field!r}", source=self.source, position=position
                )
            self.seen_ids.add(doc_part)
            meta["id"] = value
        for name in fields.metadata_fields:
            value = lookup(item, name)
            if value is not _MISSING:
                meta[name] = value
        return Document.create(text, self.source, part=doc_part, metadata=meta)


@attrs.frozen(kw_only=True)
class JsonLoaderConfig(JsonFields):
    """Options of the json loader.

    ``items_path``: dotted path of the array whose items become documents (a
    top-level array is used without it); ``content_field``: dotted path of the
    text in each item (default: the whole item, as text or JSON); ``id_field``:
    dotted path of a unique id (default: the item's index);
    ``metadata_fields``: dotted paths copied into metadata;
    ``max_file_bytes``, ``max_text_chars``: limits.
    """

    items_path: str | None = attrs.field(default=None, validator=_dotted_path)
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=attrs.validators.gt(0))
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=attrs.validators.gt(0))


class JsonLoader:
    """JSON files: a top-level array (or the array at ``items_path``) gives one document per item."""

    def __init__(self, config: JsonLoaderConfig | None = None):
        self.config = config or JsonLoaderConfig()

    def load_file(self, path: str) -> Iterator[Document]:
        """Documents of one file."""
        config = self.config
        data = parse_json(decode_text(read_bytes(path, config.max_file_bytes), path, detect=False), path)
        reader = ItemReader(config, path, config.max_text_chars)
        if config.items_path is not None:
            items = lookup(data, config.items_path)
            if not isinstance(items, list):
                found = "nothing" if items is _MISSING else type(items).__name__
                raise LoaderError(f"items_path {config.items_path!r} must lead to an array, found {found}", source=path)
        elif isinstance(data, list):
            items = data
        else:
            yield reader.document(data, None, {}, "document")
            return
        for index, item in enumerate(items):
            yield reader.document(item, index, {"item": index}, f"item {index}")

    def load(self, source: str) -> Iterator[Document]:
        """Documents of a file; a directory loads its JSON files in sorted order."""
        for path in files_of(source, JSON_SUFFIXES):
            yield from self.load_file(path)

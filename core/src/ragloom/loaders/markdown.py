"""The ``markdown`` loader: YAML frontmatter becomes metadata."""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from typing import Any

import attrs
import yaml

from ragloom.errors import LoaderError
from ragloom.loaders.base import DEFAULT_MAX_FILE_BYTES, decode_utf8, file_metadata, files_of, read_bytes
from ragloom.types import Document

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
_FRONTMATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)
_HEADING = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


@attrs.frozen(kw_only=True)
class MarkdownLoaderConfig:
    """``strip_frontmatter``: drop the frontmatter block from the text (its keys stay in metadata)."""

    strip_frontmatter: bool = True
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=attrs.validators.gt(0))


#: Most values frontmatter may expand to (YAML aliases can make a few bytes stand for billions of values).
MAX_FRONTMATTER_VALUES = 100_000


def _plain(value: Any, budget: list[int] | None = None) -> Any:
    """Frontmatter values as JSON-ready data (dates become ISO strings); ValueError past MAX_FRONTMATTER_VALUES."""
    budget = budget if budget is not None else [MAX_FRONTMATTER_VALUES]
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"frontmatter expands to more than {MAX_FRONTMATTER_VALUES} values (YAML aliases?)")
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v, budget) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, budget) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def split_frontmatter(text: str, source: str) -> tuple[dict[str, Any], str, int]:
    """``(metadata, body, body_offset)``; no frontmatter gives ``({}, text, 0)``."""
    match = _FRONTMATTER.match(text)
    if not match:
        return {}, text, 0
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        position = f"frontmatter line {mark.line + 2}" if mark is not None else "frontmatter"
        raise LoaderError(f"invalid YAML frontmatter: {getattr(exc, 'problem', exc)}", source=source, position=position) from None
    except RecursionError:
        raise LoaderError("frontmatter nested too deeply", source=source, position="frontmatter") from None
    except (ValueError, TypeError, OverflowError) as exc:  # a value YAML recognises but cannot build: 2024-13-45, a 5,000-digit int
        raise LoaderError(f"invalid YAML frontmatter: {exc}", source=source, position="frontmatter") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise LoaderError(f"frontmatter must be a mapping of keys, got {type(data).__name__}", source=source, position="frontmatter")
    try:
        plain = _plain(data)
    except (ValueError, RecursionError) as exc:
        raise LoaderError(f"invalid YAML frontmatter: {exc}", source=source, position="frontmatter") from None
    return plain, text[match.end() :], match.end()


class MarkdownLoader:
    """Markdown files: frontmatter keys in metadata, ``title`` from frontmatter or the first ``#`` heading."""

    def __init__(self, config: MarkdownLoaderConfig | None = None):
        self.config = config or MarkdownLoaderConfig()

    def load_file(self, path: str) -> Document:
        """One document."""
        text = decode_utf8(read_bytes(path, self.config.max_file_bytes), path)
        frontmatter, body, _offset = split_frontmatter(text, path)
        metadata: dict[str, Any] = {**file_metadata(path), **frontmatter}
        if "title" not in metadata:
            heading = _HEADING.search(body)
            if heading:
                metadata["title"] = heading.group(1).strip()
        return Document.create(body if self.config.strip_frontmatter else text, path, metadata=metadata)

    def load(self, source: str) -> Iterator[Document]:
        """One document per file; a directory loads its Markdown files in sorted order."""
        for path in files_of(source, MARKDOWN_SUFFIXES):
            yield self.load_file(path)

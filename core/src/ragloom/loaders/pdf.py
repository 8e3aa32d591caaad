"""The ``pdf`` loader (pdfminer.six): one document per file or per page.

A whole-document load joins the pages with a blank line and records where
each page starts (``page_offsets``), so :func:`pages_for_span` can tell the
pages a chunk (or a query result) came from.
"""

from __future__ import annotations

import bisect
import io
import re
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from ragloom.errors import LoaderError, RagloomError
from ragloom.loaders import pdfguard
from ragloom.loaders.base import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_TEXT_CHARS, file_metadata, files_of, read_bytes
from ragloom.structuring import Secret
from ragloom.types import Document

PDF_SUFFIXES = (".pdf",)
PAGE_SEPARATOR = "\n\n"
_INFO_FIELDS = {
    "Title": "title",
    "Author": "author",
    "Subject": "subject",
    "Keywords": "keywords",
    "CreationDate": "creation_date",
    "ModDate": "modification_date",
}
_PDF_DATE = re.compile(
    r"^D?:?(?P<Y>\d{4})(?P<m>\d{2})?(?P<d>\d{2})?(?P<H>\d{2})?(?P<M>\d{2})?(?P<S>\d{2})?"
    r"(?:(?P<z>Z)|(?P<sign>[+-])(?P<oh>\d{2})'?(?P<om>\d{2})?'?)?"
)


@attrs.frozen(kw_only=True)
class PdfLoaderConfig:
    """Options of the pdf loader.

    ``split_pages``: one document per page (``page`` metadata, 1-based) instead
    of one per file (``page_offsets`` metadata); ``skip_empty_pages``: with
    ``split_pages``, leave out pages without text (scans); ``password``: a
    secret reference ``{ env = "NAME" }`` for encrypted files;
    ``max_file_bytes``, ``max_text_chars`` (all pages together; also bounds
    decompressed streams), ``max_parse_seconds`` (one file's parsing).
    """

    split_pages: bool = False
    skip_empty_pages: bool = True
    password: Secret | None = None
    max_file_bytes: int = attrs.field(default=DEFAULT_MAX_FILE_BYTES, validator=attrs.validators.gt(0))
    max_text_chars: int = attrs.field(default=DEFAULT_MAX_TEXT_CHARS, validator=attrs.validators.gt(0))
    max_parse_seconds: float = attrs.field(default=300.0, validator=attrs.validators.gt(0))


def pdf_date(value: str) -> str | None:
    """ISO 8601 form of a PDF date (``D:20240131120000+01'00'``), or None when it is not one."""
    match = _PDF_DATE.match(value.strip())
    if not match:
        return None
    g = match.groupdict()
    text = f"{g['Y']}-{g['m'] or '01'}-{g['d'] or '01'}"
    if g["H"]:
        text += f"T{g['H']}:{g['M'] or '00'}:{g['S'] or '00'}"
        if g["z"]:
            text += "+00:00"
        elif g["sign"]:
            text += f"{g['sign']}{g['oh']}:{g['om'] or '00'}"
    return text


def _info_value(value: Any) -> str | None:
    from pdfminer.pdftypes import resolve1
    from pdfminer.utils import decode_text

    value = resolve1(value)
    if isinstance(value, bytes):
        value = decode_text(value)
    elif not isinstance(value, str):
        return None
    value = value.replace("\x00", "").strip()
    return value or None


def pdf_info(document: Any) -> dict[str, str]:
    """Title, author, subject, keywords and dates from a pdfminer document's info dictionary."""
    metadata: dict[str, str] = {}
    for info in document.info or []:
        if not isinstance(info, Mapping):
            continue
        for key, name in _INFO_FIELDS.items():
            if name in metadata or key not in info:
                continue
            value = _info_value(info[key])
            if value is None:
                continue
            if name.endswith("_date"):
                value = pdf_date(value) or value
            metadata[name] = value
    return metadata


def pages_for_span(metadata: Mapping[str, Any], start: int, end: int) -> list[int]:
    """1-based pages that the text span ``[start, end)`` of a PDF document covers.

    Works on the metadata of a document, chunk or query result: a per-page
    document answers its ``page``; a whole-document load answers from its
    ``page_offsets``. Metadata of something that is not a PDF gives ``[]``.
    """
    if "page_offsets" not in metadata:
        page = metadata.get("page")
        return [page] if isinstance(page, int) else []
    offsets = list(metadata["page_offsets"])
    if not offsets:
        return []
    end = max(end, start + 1)
    first = max(bisect.bisect_right(offsets, start) - 1, 0)
    last = max(bisect.bisect_right(offsets, end - 1) - 1, first)
    return list(range(first + 1, last + 2))


class _PageTexts:
    """Text of each page in order, with the total bounded by ``max_chars``."""

    def __init__(self, data: bytes, path: str, password: str, max_chars: int, max_seconds: float = 300.0):
        self.budget = pdfguard.budget_for(path, max_chars, max_seconds)
        self.data = data
        self.path = path
        self.password = password
        self.max_chars = max_chars
        self.info: dict[str, str] = {}
        self.page_count = 0

    def open(self) -> Iterator[str]:
        from pdfminer.converter import TextConverter
        from pdfminer.layout import LAParams
        from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect
        from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
        from pdfminer.pdfpage import PDFPage
        from pdfminer.pdfparser import PDFParser

        path = self.path
        try:
            with pdfguard.bounded(self.budget):
                document = pdfguard.safe_document_class()(PDFParser(io.BytesIO(self.data)), password=self.password)
                self.info = pdf_info(document)
                pages = list(PDFPage.create_pages(document))
        except PDFPasswordIncorrect:
            what = "the password is wrong" if self.password else "set `password` to read it"
            raise LoaderError(f"the PDF is encrypted; {what}", source=path) from None
        except PDFEncryptionError as exc:
            raise LoaderError(f"the PDF is encrypted in an unsupported way: {exc}", source=path) from None
        except RagloomError:
            raise
        except Exception as exc:  # noqa: BLE001 - pdfminer raises many types on corrupt files
            raise LoaderError(f"not a readable PDF ({type(exc).__name__}: {exc})", source=path) from exc
        if not pages:
            raise LoaderError("not a readable PDF (no pages found)", source=path)
        self.page_count = len(pages)
        return self._texts(pages, PDFResourceManager, TextConverter, LAParams, PDFPageInterpreter)

    def _texts(
        self, pages: list[Any], manager_cls: Any, converter_cls: Any, params_cls: Any, interpreter_cls: Any
    ) -> Iterator[str]:
        output = io.StringIO()
        manager = manager_cls(caching=True)
        device = converter_cls(manager, output, laparams=params_cls())
        interpreter = interpreter_cls(manager, device)
        total = 0
        for number, page in enumerate(pages, start=1):
            try:
                with pdfguard.bounded(self.budget):
                    interpreter.process_page(page)
            except RagloomError as exc:
                raise LoaderError(exc.reason if isinstance(exc, LoaderError) else str(exc), source=self.path, position=f"page {number}") from exc
            except Exception as exc:  # noqa: BLE001 - see above
                raise LoaderError(
                    f"cannot extract text ({type(exc).__name__}: {exc})", source=self.path, position=f"page {number}"
                ) from exc
            text = output.getvalue().replace("\f", "").strip()
            output.seek(0)
            output.truncate()
            total += len(text)
            if total > self.max_chars:
                raise LoaderError(
                    f"extracted text is over the limit of {self.max_chars} characters (max_text_chars)",
                    source=self.path,
                    position=f"page {number}",
                )
            yield text


class PdfLoader:
    """PDF files: text by pdfminer.six; info title/author/dates and page numbers in metadata."""

    def __init__(self, config: PdfLoaderConfig | None = None):
        self.config = config or PdfLoaderConfig()

    def load_file(self, path: str) -> Iterator[Document]:
        """Documents of one file: one, or one per page with ``split_pages``."""
        config = self.config
        password = config.password.get() if config.password is not None else ""
        reader = _PageTexts(read_bytes(path, config.max_file_bytes), path, password, config.max_text_chars, config.max_parse_seconds)
        texts = reader.open()
        metadata = {**file_metadata(path), **reader.info, "page_count": reader.page_count}
        if config.split_pages:
            for number, text in enumerate(texts, start=1):
                if text or not config.skip_empty_pages:
                    yield Document.create(text, path, part=f"page:{number}", metadata={**metadata, "page": number})
            return
        parts: list[str] = []
        offsets: list[int] = []
        length = 0
        for number, text in enumerate(texts, start=1):
            if number > 1:
                parts.append(PAGE_SEPARATOR)
                length += len(PAGE_SEPARATOR)
            offsets.append(length)
            parts.append(text)
            length += len(text)
        yield Document.create("".join(parts), path, metadata={**metadata, "page_offsets": offsets})

    def load(self, source: str) -> Iterator[Document]:
        """Documents of a file; a directory loads its PDF files in sorted order."""
        for path in files_of(source, PDF_SUFFIXES):
            yield from self.load_file(path)

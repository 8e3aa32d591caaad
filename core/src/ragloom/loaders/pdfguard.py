"""Bounds on pdfminer for hostile PDFs: decompressed bytes, reference loops and parsing time.

pdfminer decompresses a FlateDecode stream whole (a 1 MB file can hold a
1 GiB stream), follows ``1 0 obj 1 0 R`` forever and has no time limit. While
:func:`bounded` is active (a context variable: per thread), pdfminer's zlib
calls go through :class:`_BoundedZlib`, which refuses to inflate past the
budget, and :class:`SafePDFDocument` follows reference chains a bounded number
of hops and checks the deadline on every object it fetches.
"""

from __future__ import annotations

import contextlib
import time
import zlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

import attrs

from ragloom.errors import LoaderError

MAX_REFERENCE_HOPS = 32


@attrs.define
class _Budget:
    per_stream: int
    total: int
    deadline: float
    source: str
    used: int = 0

    def take(self, amount: int) -> None:
        self.used += amount
        if self.used > self.total:
            raise LoaderError(
                f"decompressed streams are over {self.total} bytes in all (bounded by max_text_chars)", source=self.source
            )

    def check_time(self) -> None:
        if time.monotonic() > self.deadline:
            raise LoaderError("parsing took longer than max_parse_seconds", source=self.source)


_budget: ContextVar[_Budget | None] = ContextVar("ragloom_pdf_budget", default=None)


class _BoundedDecompressor:
    """``zlib.decompressobj()`` whose output stops at the stream budget."""

    def __init__(self, budget: _Budget):
        self._inner = zlib.decompressobj()
        self._budget = budget
        self._out = 0

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        room = self._budget.per_stream - self._out + 1
        out = self._inner.decompress(data, room if max_length <= 0 else min(room, max_length))
        self._out += len(out)
        if self._out > self._budget.per_stream:
            raise LoaderError(
                f"a compressed stream inflates to over {self._budget.per_stream} bytes (bounded by max_text_chars)",
                source=self._budget.source,
            )
        self._budget.take(len(out))
        self._budget.check_time()
        return out

    def flush(self, *args: Any) -> bytes:
        return self._inner.flush(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _BoundedZlib:
    """Stands in for the ``zlib`` module inside ``pdfminer.pdftypes``; unbounded when no budget is active."""

    error = zlib.error

    def decompress(self, data: bytes, *args: Any, **kwargs: Any) -> bytes:
        budget = _budget.get()
        if budget is None:
            return zlib.decompress(data, *args, **kwargs)
        inflater = _BoundedDecompressor(budget)
        out = inflater.decompress(data)
        if not inflater.eof:
            raise zlib.error("incomplete or truncated stream")  # pdfminer then tries its corrupted-data path
        return out

    def decompressobj(self, *args: Any, **kwargs: Any) -> Any:
        budget = _budget.get()
        if budget is None:
            return zlib.decompressobj(*args, **kwargs)
        return _BoundedDecompressor(budget)

    def __getattr__(self, name: str) -> Any:
        return getattr(zlib, name)


def _install() -> None:
    from pdfminer import pdftypes

    if not isinstance(pdftypes.zlib, _BoundedZlib):
        pdftypes.zlib = _BoundedZlib()  # type: ignore[assignment]


def safe_document_class() -> type:
    """A PDFDocument whose object fetches follow at most MAX_REFERENCE_HOPS references and honour the deadline."""
    from pdfminer.pdfdocument import PDFDocument
    from pdfminer.pdftypes import PDFObjRef

    class SafePDFDocument(PDFDocument):  # type: ignore[misc]
        def getobj(self, objid: int) -> object:
            budget = _budget.get()
            if budget is not None:
                budget.check_time()
            obj = super().getobj(objid)
            hops = 0
            while isinstance(obj, PDFObjRef):  # an object that is only a reference: follow it here, bounded
                hops += 1
                if hops > MAX_REFERENCE_HOPS or obj.objid == objid:
                    raise LoaderError(f"object {objid} refers to itself through a loop of references", source=budget.source if budget else None)
                obj = super().getobj(obj.objid)
            return obj

    return SafePDFDocument


def budget_for(source: str, max_text_chars: int, max_seconds: float) -> _Budget:
    """The bounds of one PDF: each stream inflates to at most ``max_text_chars`` bytes (plus 1 MiB for
    fonts and small images), all streams together to four times that, the whole parse to ``max_seconds``."""
    per_stream = max_text_chars + 1024 * 1024
    return _Budget(per_stream=per_stream, total=4 * per_stream, deadline=time.monotonic() + max_seconds, source=source)


@contextlib.contextmanager
def bounded(budget: _Budget) -> Iterator[None]:
    """Apply ``budget`` to pdfminer calls made inside the block (in this thread)."""
    _install()
    token = _budget.set(budget)
    try:
        yield
    finally:
        _budget.reset(token)
